//! Parsing of ELF64 x86-64 headers: just what loading needs.

use crate::abi::Errno;

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_INTERP: u32 = 3;
pub(crate) const PT_PHDR: u32 = 6;
pub(crate) const ET_EXEC: u16 = 2;
pub(crate) const ET_DYN: u16 = 3;
const EM_X86_64: u16 = 62;
pub(crate) const PHDR_SIZE: usize = 56;
const MAX_PHNUM: usize = 128;

/// The ELF file header fields loading uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: u16,
    pub entry: u64,
    pub phoff: u64,
    pub phnum: usize,
}

/// One program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProgramHeader {
    pub kind: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    b.get(off..off + 2).and_then(|s| s.try_into().ok()).map_or(0, u16::from_le_bytes)
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_le_bytes)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes)
}

/// Whether `b` starts with the ELF magic.
pub(crate) fn is_elf(b: &[u8]) -> bool {
    b.starts_with(b"\x7fELF")
}

/// Parses and validates the 64-byte file header.
pub(crate) fn parse_header(b: &[u8]) -> Result<Header, Errno> {
    if b.len() < 64 || !is_elf(b) {
        return Err(Errno::ENOEXEC);
    }
    // 64-bit, little-endian, current version.
    if b[4] != 2 || b[5] != 1 || b[6] != 1 {
        return Err(Errno::ENOEXEC);
    }
    let kind = u16_at(b, 16);
    if kind != ET_EXEC && kind != ET_DYN {
        return Err(Errno::ENOEXEC);
    }
    if u16_at(b, 18) != EM_X86_64 {
        return Err(Errno::ENOEXEC);
    }
    let phentsize = usize::from(u16_at(b, 54));
    let phnum = usize::from(u16_at(b, 56));
    if phentsize != PHDR_SIZE || phnum == 0 || phnum > MAX_PHNUM {
        return Err(Errno::ENOEXEC);
    }
    Ok(Header { kind, entry: u64_at(b, 24), phoff: u64_at(b, 32), phnum })
}

/// Parses `phnum` program headers from `b` (the bytes at `phoff`).
pub(crate) fn parse_program_headers(b: &[u8], phnum: usize) -> Result<Vec<ProgramHeader>, Errno> {
    if b.len() < phnum * PHDR_SIZE {
        return Err(Errno::ENOEXEC);
    }
    let phdrs: Vec<ProgramHeader> = (0..phnum)
        .map(|i| {
            let p = &b[i * PHDR_SIZE..];
            ProgramHeader {
                kind: u32_at(p, 0),
                flags: u32_at(p, 4),
                offset: u64_at(p, 8),
                vaddr: u64_at(p, 16),
                filesz: u64_at(p, 32),
                memsz: u64_at(p, 40),
            }
        })
        .collect();
    for ph in phdrs.iter().filter(|p| p.kind == PT_LOAD) {
        let bad = ph.filesz > ph.memsz
            || ph.vaddr.checked_add(ph.memsz).is_none()
            || ph.offset.checked_add(ph.filesz).is_none()
            || ph.vaddr % 4096 != ph.offset % 4096;
        if bad {
            return Err(Errno::ENOEXEC);
        }
    }
    if !phdrs.iter().any(|p| p.kind == PT_LOAD) {
        return Err(Errno::ENOEXEC);
    }
    Ok(phdrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u16, machine: u16, phnum: u16) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[6] = 1;
        b[16..18].copy_from_slice(&kind.to_le_bytes());
        b[18..20].copy_from_slice(&machine.to_le_bytes());
        b[24..32].copy_from_slice(&0x401000u64.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&phnum.to_le_bytes());
        b
    }

    fn phdr(kind: u32, offset: u64, vaddr: u64, filesz: u64, memsz: u64) -> Vec<u8> {
        let mut p = vec![0u8; 56];
        p[0..4].copy_from_slice(&kind.to_le_bytes());
        p[4..8].copy_from_slice(&5u32.to_le_bytes());
        p[8..16].copy_from_slice(&offset.to_le_bytes());
        p[16..24].copy_from_slice(&vaddr.to_le_bytes());
        p[32..40].copy_from_slice(&filesz.to_le_bytes());
        p[40..48].copy_from_slice(&memsz.to_le_bytes());
        p
    }

    #[test]
    fn parses_a_valid_header() {
        let h = parse_header(&header(ET_EXEC, 62, 2)).unwrap();
        assert_eq!(h, Header { kind: ET_EXEC, entry: 0x401000, phoff: 64, phnum: 2 });
    }

    #[test]
    fn rejects_foreign_and_malformed_headers() {
        assert_eq!(parse_header(&header(ET_EXEC, 183, 1)), Err(Errno::ENOEXEC), "aarch64");
        assert_eq!(parse_header(&header(1, 62, 1)), Err(Errno::ENOEXEC), "relocatable");
        assert_eq!(parse_header(&header(ET_DYN, 62, 0)), Err(Errno::ENOEXEC), "no phdrs");
        assert_eq!(parse_header(b"#!/bin/sh\n"), Err(Errno::ENOEXEC));
        assert_eq!(parse_header(&header(ET_DYN, 62, 1)[..40]), Err(Errno::ENOEXEC), "truncated");
    }

    #[test]
    fn validates_load_segments() {
        let good = phdr(PT_LOAD, 0x1000, 0x401000, 0x10, 0x20);
        assert_eq!(parse_program_headers(&good, 1).unwrap()[0].memsz, 0x20);
        let filesz_gt_memsz = phdr(PT_LOAD, 0, 0x400000, 0x30, 0x20);
        assert_eq!(parse_program_headers(&filesz_gt_memsz, 1), Err(Errno::ENOEXEC));
        let misaligned = phdr(PT_LOAD, 0x10, 0x401000, 0x10, 0x10);
        assert_eq!(parse_program_headers(&misaligned, 1), Err(Errno::ENOEXEC));
        let overflow = phdr(PT_LOAD, 0, u64::MAX - 0xfff, 0, 0x2000);
        assert_eq!(parse_program_headers(&overflow, 1), Err(Errno::ENOEXEC));
        let no_load = phdr(PT_INTERP, 0, 0, 0, 0);
        assert_eq!(parse_program_headers(&no_load, 1), Err(Errno::ENOEXEC));
        assert_eq!(parse_program_headers(&good[..20], 1), Err(Errno::ENOEXEC));
    }
}
