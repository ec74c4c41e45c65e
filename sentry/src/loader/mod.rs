//! Loading a program image into a fresh address space: ELF executables
//! (static, static-PIE, dynamic with PT_INTERP), `#!` scripts, and the
//! initial stack with argv, envp and the auxiliary vector.

pub(crate) mod elf;
pub(crate) mod stack;

pub(crate) use stack::ArgRanges;

use crate::abi::{page_down, page_up, Errno, PAGE_SIZE};
use crate::mm::{Backing, MapRequest, Mappable, MemoryManager, VmaName};
use crate::platform::Perms;
use crate::vfs::FileDescription;
use elf::{ProgramHeader, ET_DYN, PT_INTERP, PT_LOAD, PT_PHDR};
use std::sync::Arc;

/// Where a position-independent main executable is loaded (Linux's
/// ELF_ET_DYN_BASE without randomization).
const PIE_BASE: u64 = 0x5555_5555_4000;
/// The top of the initial stack.
pub(crate) const STACK_TOP: u64 = crate::platform::TASK_SIZE;
/// The initial stack area (RLIMIT_STACK's default).
pub(crate) const STACK_SIZE: u64 = 8 << 20;
/// Where top-down placement of mappings starts.
pub(crate) const MMAP_TOP: u64 = STACK_TOP - STACK_SIZE - (1 << 30);
/// `#!` lines and ELF headers are read from the first bytes of a file.
const BINPRM_BUF_SIZE: usize = 256;
/// Nested interpreters allowed (Linux: BINPRM_MAX_RECURSION).
const MAX_INTERPRETERS: usize = 4;

/// The process identity auxv reports.
pub(crate) struct AuxIds {
    pub uid: u32,
    pub euid: u32,
    pub gid: u32,
    pub egid: u32,
}

/// Opens a file for execution: resolves the path (following symlinks),
/// checks that it is a regular file with execute permission, and returns
/// it with its mapping interface.
pub(crate) type OpenExec<'a> = dyn Fn(&[u8]) -> Result<Arc<FileDescription>, Errno> + 'a;

/// The result of a successful load.
pub(crate) struct Loaded {
    pub entry: u64,
    pub sp: u64,
    /// The executable finally loaded (the script's interpreter for `#!`).
    pub exe: Arc<FileDescription>,
    /// The argv the program actually sees (rewritten for `#!`).
    pub argv: Vec<Vec<u8>>,
    pub args: ArgRanges,
    pub auxv: Vec<u8>,
}

/// Loads `path` into `mm` (which must be empty).
pub(crate) fn load(
    mm: &MemoryManager,
    open: &OpenExec<'_>,
    path: &[u8],
    argv: Vec<Vec<u8>>,
    envp: &[Vec<u8>],
    ids: &AuxIds,
) -> Result<Loaded, Errno> {
    let mut path = path.to_vec();
    let mut argv = argv;
    let mut file = open(&path)?;
    for _ in 0..=MAX_INTERPRETERS {
        let mut head = vec![0u8; BINPRM_BUF_SIZE];
        let n = read_full(&file, &mut head, 0)?;
        head.truncate(n);
        if elf::is_elf(&head) {
            return load_elf(mm, open, file, &path, argv, envp, ids);
        }
        let (interp, arg) = parse_shebang(&head)?;
        let mut new_argv = vec![interp.clone()];
        new_argv.extend(arg);
        new_argv.push(path.clone());
        new_argv.extend(argv.into_iter().skip(1));
        argv = new_argv;
        file = open(&interp)?;
        path = interp;
    }
    Err(Errno::ELOOP)
}

/// Parses a `#!` line into the interpreter and its optional argument.
pub(crate) fn parse_shebang(head: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>), Errno> {
    let rest = head.strip_prefix(b"#!").ok_or(Errno::ENOEXEC)?;
    let line = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => &rest[..i],
        // A line that does not end within the buffer is an error unless
        // the interpreter itself fits (Linux 5.x behaviour simplified).
        None => rest,
    };
    let is_ws = |b: &u8| *b == b' ' || *b == b'\t';
    let line: Vec<u8> = line.iter().copied().skip_while(is_ws).collect();
    let end = line.iter().position(is_ws).unwrap_or(line.len());
    let interp = line[..end].to_vec();
    if interp.is_empty() {
        return Err(Errno::ENOEXEC);
    }
    let arg: Vec<u8> = line[end..].iter().copied().skip_while(is_ws).collect();
    let arg_len = arg.iter().rposition(|b| !is_ws(b)).map_or(0, |i| i + 1);
    let arg = (arg_len > 0).then(|| arg[..arg_len].to_vec());
    Ok((interp, arg))
}

fn read_full(file: &FileDescription, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        let n = file.pread(&mut buf[done..], off + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// An ELF image mapped into memory.
struct Image {
    bias: u64,
    entry: u64,
    phdr: u64,
    phnum: usize,
    end: u64,
    interp: Option<Vec<u8>>,
}

fn load_elf(
    mm: &MemoryManager,
    open: &OpenExec<'_>,
    file: Arc<FileDescription>,
    path: &[u8],
    argv: Vec<Vec<u8>>,
    envp: &[Vec<u8>],
    ids: &AuxIds,
) -> Result<Loaded, Errno> {
    let main = map_image(mm, &file, true)?;
    let (entry, base) = match &main.interp {
        Some(interp_path) => {
            let interp_file = open(interp_path)?;
            let interp = map_image(mm, &interp_file, false)?;
            if interp.interp.is_some() {
                return Err(Errno::ELIBBAD);
            }
            (interp.entry, interp.bias)
        }
        None => (main.entry, 0),
    };
    mm.set_brk_start(main.end);
    let stack_bottom = STACK_TOP - STACK_SIZE;
    mm.mmap(MapRequest {
        addr: stack_bottom,
        len: STACK_SIZE,
        perms: Perms { read: true, write: true, exec: false },
        fixed: false,
        noreplace: true,
        shared: false,
        backing: Backing::Anon,
        name: VmaName::Stack,
    })?;
    let mut random = [0u8; 16];
    host_random(&mut random);
    let auxv = [
        (stack::AT_HWCAP, hwcap()),
        (stack::AT_PAGESZ, PAGE_SIZE),
        (stack::AT_CLKTCK, 100),
        (stack::AT_PHDR, main.phdr),
        (stack::AT_PHENT, elf::PHDR_SIZE as u64),
        (stack::AT_PHNUM, main.phnum as u64),
        (stack::AT_BASE, base),
        (stack::AT_FLAGS, 0),
        (stack::AT_ENTRY, main.entry),
        (stack::AT_UID, u64::from(ids.uid)),
        (stack::AT_EUID, u64::from(ids.euid)),
        (stack::AT_GID, u64::from(ids.gid)),
        (stack::AT_EGID, u64::from(ids.egid)),
        (stack::AT_SECURE, 0),
        (stack::AT_HWCAP2, 0),
    ];
    let img = stack::build(STACK_TOP, &argv, envp, path, &random, &auxv).ok_or(Errno::E2BIG)?;
    if STACK_TOP - img.sp > STACK_SIZE / 4 {
        return Err(Errno::E2BIG);
    }
    mm.copy_out(img.sp, &img.bytes)?;
    Ok(Loaded { entry, sp: img.sp, exe: file, argv, args: img.args, auxv: img.auxv })
}

fn perms_of(ph: &ProgramHeader) -> Perms {
    Perms { read: ph.flags & 4 != 0, write: ph.flags & 2 != 0, exec: ph.flags & 1 != 0 }
}

/// Maps the PT_LOAD segments of `file`.
fn map_image(mm: &MemoryManager, file: &Arc<FileDescription>, is_main: bool) -> Result<Image, Errno> {
    let mappable: Arc<dyn Mappable> = file.ops.mappable().ok_or(Errno::EACCES)?;
    let mut head = [0u8; 64];
    if read_full(file, &mut head, 0)? < head.len() {
        return Err(Errno::ENOEXEC);
    }
    let hdr = elf::parse_header(&head)?;
    let mut ph_bytes = vec![0u8; hdr.phnum * elf::PHDR_SIZE];
    if read_full(file, &mut ph_bytes, hdr.phoff)? < ph_bytes.len() {
        return Err(Errno::ENOEXEC);
    }
    let phdrs = elf::parse_program_headers(&ph_bytes, hdr.phnum)?;
    let loads: Vec<&ProgramHeader> = phdrs.iter().filter(|p| p.kind == PT_LOAD).collect();
    let lo = loads.iter().map(|p| page_down(p.vaddr)).min().ok_or(Errno::ENOEXEC)?;
    let hi = loads
        .iter()
        .map(|p| page_up(p.vaddr + p.memsz))
        .try_fold(0u64, |m, e| e.map(|e| m.max(e)))
        .ok_or(Errno::ENOEXEC)?;
    let span = hi.checked_sub(lo).filter(|&s| s > 0).ok_or(Errno::ENOEXEC)?;

    let bias = if hdr.kind != ET_DYN {
        0
    } else if is_main {
        PIE_BASE.checked_sub(lo).ok_or(Errno::ENOEXEC)?
    } else {
        // Reserve the whole span, then map the segments over it.
        let start = mm.mmap(MapRequest {
            addr: 0,
            len: span,
            perms: Perms::default(),
            fixed: false,
            noreplace: false,
            shared: false,
            backing: Backing::Anon,
            name: VmaName::None,
        })?;
        start - lo
    };

    let interp = match phdrs.iter().find(|p| p.kind == PT_INTERP) {
        Some(p) => {
            let len = usize::try_from(p.filesz).map_err(|_| Errno::ENOEXEC)?;
            if !(2..=4096).contains(&len) {
                return Err(Errno::ENOEXEC);
            }
            let mut buf = vec![0u8; len];
            if read_full(file, &mut buf, p.offset)? < len {
                return Err(Errno::ENOEXEC);
            }
            let end = buf.iter().position(|&b| b == 0).unwrap_or(len);
            buf.truncate(end);
            Some(buf)
        }
        None => None,
    };

    for ph in &loads {
        map_segment(mm, &mappable, ph, bias)?;
    }

    let phdr = match phdrs.iter().find(|p| p.kind == PT_PHDR) {
        Some(p) => p.vaddr + bias,
        None => loads
            .iter()
            .find(|p| p.offset <= hdr.phoff && hdr.phoff < p.offset + p.filesz)
            .map(|p| p.vaddr + (hdr.phoff - p.offset) + bias)
            .unwrap_or(0),
    };
    Ok(Image { bias, entry: hdr.entry + bias, phdr, phnum: hdr.phnum, end: hi + bias, interp })
}

fn map_segment(mm: &MemoryManager, file: &Arc<dyn Mappable>, ph: &ProgramHeader, bias: u64) -> Result<(), Errno> {
    let perms = perms_of(ph);
    let vaddr = ph.vaddr.checked_add(bias).ok_or(Errno::ENOEXEC)?;
    let start = page_down(vaddr);
    let file_end = vaddr + ph.filesz;
    let mem_end = vaddr + ph.memsz;
    let file_map_end = page_up(file_end).ok_or(Errno::ENOEXEC)?;
    if ph.filesz > 0 {
        mm.mmap(MapRequest {
            addr: start,
            len: file_map_end - start,
            perms,
            fixed: true,
            noreplace: false,
            shared: false,
            backing: Backing::File { file: file.clone(), offset: page_down(ph.offset) },
            name: VmaName::None,
        })?;
        // The rest of the last file page belongs to .bss: zero it.
        let tail = file_map_end.min(page_up(mem_end).unwrap_or(file_map_end)) - file_end;
        if ph.memsz > ph.filesz && tail > 0 && perms.write {
            let zeros = vec![0u8; usize::try_from(tail).map_err(|_| Errno::ENOEXEC)?];
            mm.copy_out(file_end, &zeros)?;
        }
    }
    let anon_start = if ph.filesz > 0 { file_map_end } else { start };
    let anon_end = page_up(mem_end).ok_or(Errno::ENOEXEC)?;
    if anon_end > anon_start {
        mm.mmap(MapRequest {
            addr: anon_start,
            len: anon_end - anon_start,
            perms,
            fixed: true,
            noreplace: false,
            shared: false,
            backing: Backing::Anon,
            name: VmaName::None,
        })?;
    }
    Ok(())
}

/// AT_HWCAP on x86-64: CPUID leaf 1's EDX feature bits.
fn hwcap() -> u64 {
    let leaf = std::arch::x86_64::__cpuid(1);
    u64::from(leaf.edx)
}

/// Fills `buf` from the host's random source.
pub(crate) fn host_random(buf: &mut [u8]) {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: the kernel writes at most rest.len() bytes into `rest`.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        match usize::try_from(n) {
            Ok(n) => done += n,
            Err(_) => {
                log::error!("host getrandom failed: {}", std::io::Error::last_os_error());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_forms() {
        assert_eq!(parse_shebang(b"#!/bin/sh\necho").unwrap(), (b"/bin/sh".to_vec(), None));
        assert_eq!(
            parse_shebang(b"#!  /usr/bin/env   python3 -u \n").unwrap(),
            (b"/usr/bin/env".to_vec(), Some(b"python3 -u".to_vec()))
        );
        assert_eq!(parse_shebang(b"#!\n"), Err(Errno::ENOEXEC));
        assert_eq!(parse_shebang(b"echo hi"), Err(Errno::ENOEXEC));
    }
}
