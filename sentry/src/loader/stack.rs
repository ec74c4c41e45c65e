//! The initial process stack: argc, argv, envp, the auxiliary vector and
//! the strings they point to, laid out as the x86-64 ABI specifies.

use crate::abi::layout::Encoder;

/// Where argv and envp live in the guest's memory (for /proc/[pid]/cmdline
/// and environ, which read them from there as Linux does).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgRanges {
    pub arg_start: u64,
    pub arg_end: u64,
    pub env_start: u64,
    pub env_end: u64,
}

pub(crate) const AT_NULL: u64 = 0;
pub(crate) const AT_PHDR: u64 = 3;
pub(crate) const AT_PHENT: u64 = 4;
pub(crate) const AT_PHNUM: u64 = 5;
pub(crate) const AT_PAGESZ: u64 = 6;
pub(crate) const AT_BASE: u64 = 7;
pub(crate) const AT_FLAGS: u64 = 8;
pub(crate) const AT_ENTRY: u64 = 9;
pub(crate) const AT_UID: u64 = 11;
pub(crate) const AT_EUID: u64 = 12;
pub(crate) const AT_GID: u64 = 13;
pub(crate) const AT_EGID: u64 = 14;
pub(crate) const AT_PLATFORM: u64 = 15;
pub(crate) const AT_HWCAP: u64 = 16;
pub(crate) const AT_CLKTCK: u64 = 17;
pub(crate) const AT_SECURE: u64 = 23;
pub(crate) const AT_RANDOM: u64 = 25;
pub(crate) const AT_HWCAP2: u64 = 26;
pub(crate) const AT_EXECFN: u64 = 31;

/// Auxv entries whose values point at strings or bytes placed by the
/// builder.
pub(crate) struct StackImage {
    /// The bytes to copy to `[sp, top)`.
    pub bytes: Vec<u8>,
    /// The initial stack pointer (16-byte aligned, pointing at argc).
    pub sp: u64,
    /// Where the argv and envp strings lie, for /proc/[pid]/cmdline and
    /// environ.
    pub args: ArgRanges,
    /// The auxiliary vector as laid out (for /proc/[pid]/auxv).
    pub auxv: Vec<u8>,
}

/// Lays out the stack that ends at `top`. `auxv` must not contain
/// AT_RANDOM, AT_EXECFN or AT_PLATFORM; they are added here.
pub(crate) fn build(
    top: u64,
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    execfn: &[u8],
    random: &[u8; 16],
    auxv: &[(u64, u64)],
) -> Option<StackImage> {
    // Strings area, built downwards from `top`: execfn, then argv and envp
    // strings, then the platform string and random bytes.
    let mut strings: Vec<u8> = Vec::new();
    let mut push = |s: &[u8], nul: bool| -> u64 {
        let off = strings.len() as u64;
        strings.extend_from_slice(s);
        if nul {
            strings.push(0);
        }
        off
    };
    let arg_offs: Vec<u64> = argv.iter().map(|a| push(a, true)).collect();
    let env_offs: Vec<u64> = envp.iter().map(|e| push(e, true)).collect();
    let execfn_off = push(execfn, true);
    let platform_off = push(b"x86_64", true);
    let random_off = push(random, false);
    let strings_len = strings.len() as u64;
    // Guard word at the very top, as Linux leaves one.
    let strings_base = top.checked_sub(8)?.checked_sub(strings_len)? & !0xf;
    let addr = |off: u64| strings_base + off;

    let mut aux: Vec<(u64, u64)> = auxv.to_vec();
    aux.push((AT_RANDOM, addr(random_off)));
    aux.push((AT_EXECFN, addr(execfn_off)));
    aux.push((AT_PLATFORM, addr(platform_off)));
    aux.push((AT_NULL, 0));

    let words = 1 + argv.len() + 1 + envp.len() + 1 + aux.len() * 2;
    let table_len = (words * 8) as u64;
    let sp = strings_base.checked_sub(table_len)? & !0xf;

    let mut e = Encoder::with_capacity(usize::try_from(top - sp).ok()?);
    e.u64(argv.len() as u64);
    for o in &arg_offs {
        e.u64(addr(*o));
    }
    e.u64(0);
    for o in &env_offs {
        e.u64(addr(*o));
    }
    e.u64(0);
    for (k, v) in &aux {
        e.u64(*k).u64(*v);
    }
    let pad = usize::try_from(strings_base - sp).ok()?.checked_sub(e.len())?;
    e.zeros(pad);
    e.bytes(&strings);
    let tail = usize::try_from(top - sp).ok()?.checked_sub(e.len())?;
    e.zeros(tail);
    let args = ArgRanges {
        arg_start: addr(0),
        arg_end: addr(env_offs.first().copied().unwrap_or(execfn_off)),
        env_start: addr(env_offs.first().copied().unwrap_or(execfn_off)),
        env_end: addr(execfn_off),
    };
    let mut auxv = Encoder::with_capacity(aux.len() * 16);
    for (k, v) in &aux {
        auxv.u64(*k).u64(*v);
    }
    Some(StackImage { bytes: e.finish(), sp, args, auxv: auxv.finish() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::layout::Decoder;

    #[test]
    fn layout_is_aligned_and_self_consistent() {
        let top = 0x7fff_0000_0000u64;
        let argv = vec![b"/bin/prog".to_vec(), b"arg1".to_vec()];
        let envp = vec![b"A=1".to_vec()];
        let img = build(top, &argv, &envp, b"/bin/prog", &[7u8; 16], &[(AT_PAGESZ, 4096)]).unwrap();
        assert_eq!(img.sp % 16, 0);
        assert_eq!(img.sp + img.bytes.len() as u64, top);
        let at = |addr: u64| &img.bytes[usize::try_from(addr - img.sp).unwrap()..];
        let cstr = |addr: u64| {
            let s = at(addr);
            s[..s.iter().position(|&b| b == 0).unwrap()].to_vec()
        };
        let mut d = Decoder::new(&img.bytes);
        assert_eq!(d.u64(), 2);
        assert_eq!(cstr(d.u64()), b"/bin/prog");
        assert_eq!(cstr(d.u64()), b"arg1");
        assert_eq!(d.u64(), 0);
        assert_eq!(cstr(d.u64()), b"A=1");
        assert_eq!(d.u64(), 0);
        let mut aux = std::collections::HashMap::new();
        loop {
            let (k, v) = (d.u64(), d.u64());
            if k == AT_NULL {
                break;
            }
            aux.insert(k, v);
        }
        assert_eq!(aux[&AT_PAGESZ], 4096);
        assert_eq!(&at(aux[&AT_RANDOM])[..16], &[7u8; 16]);
        assert_eq!(cstr(aux[&AT_EXECFN]), b"/bin/prog");
        assert_eq!(cstr(aux[&AT_PLATFORM]), b"x86_64");
    }

    #[test]
    fn refuses_a_stack_that_does_not_fit() {
        assert!(build(64, &[vec![b'a'; 100]], &[], b"a", &[0; 16], &[]).is_none());
    }
}
