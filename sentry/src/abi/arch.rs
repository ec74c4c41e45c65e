//! x86-64 specifics of the guest ABI: arch_prctl(2)'s codes (also
//! PTRACE_ARCH_PRCTL's) and the ELF note types that name ptrace's
//! register sets.

pub const ARCH_SET_GS: i32 = 0x1001;
pub const ARCH_SET_FS: i32 = 0x1002;
pub const ARCH_GET_FS: i32 = 0x1003;
pub const ARCH_GET_GS: i32 = 0x1004;
pub const ARCH_GET_CPUID: i32 = 0x1011;
pub const ARCH_SET_CPUID: i32 = 0x1012;

/// `NT_PRSTATUS`: the general registers (`struct user_regs_struct`).
pub const NT_PRSTATUS: u64 = 1;
/// `NT_PRFPREG`: the FXSAVE area (`struct user_fpregs_struct`).
pub const NT_PRFPREG: u64 = 2;
/// `NT_X86_XSTATE`: the XSAVE area.
pub const NT_X86_XSTATE: u64 = 0x202;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_match_linux() {
        assert_eq!(u64::try_from(libc::NT_PRSTATUS), Ok(NT_PRSTATUS));
        assert_eq!(u64::try_from(libc::NT_PRFPREG), Ok(NT_PRFPREG));
    }
}
