//! The OCI `linux.seccomp` profile, compiled to a classic BPF program as
//! runc has libseccomp do: the sentry installs it on the container's
//! processes, so it filters their calls as the host kernel would under
//! runc (Docker's default profile denies what it denies there).
//!
//! Rules are tried in the profile's order, the first one whose call and
//! argument conditions match giving its action; otherwise the default.
//! A rule's conditions are ANDed, unless two name the same argument
//! (runc then adds each condition as a rule of its own). Names this
//! sandbox does not know are skipped, as runc skips names libseccomp does
//! not know; a malformed profile is an error.

use husk_sentry::api::kernel::seccomp::bpf::{op, Insn, MAX_INSNS};
use husk_sentry::api::kernel::seccomp::{AUDIT_ARCH_X86_64, RET_DATA, RET_ERRNO, RET_KILL_PROCESS, RET_TRACE};
use husk_sentry::api::syscalls::names::NAMES;
use oci_spec::runtime::{
    LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArg, LinuxSeccompFilterFlag, LinuxSeccompOperator,
};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProfileError {
    #[error("linux.seccomp: {0} is not supported (no notification listener can be made)")]
    Notify(&'static str),
    #[error("linux.seccomp: syscalls[{0}] has an argument index {1} (0 to 5)")]
    ArgIndex(usize, usize),
    #[error("linux.seccomp: syscalls[{0}] has no names")]
    NoNames(usize),
    #[error("linux.seccomp: the profile compiles to {0} instructions, more than the {MAX_INSNS} a filter may have")]
    TooLong(usize),
}

/// A compiled profile: the program, and whether its actions are logged
/// (SECCOMP_FILTER_FLAG_LOG).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    pub insns: Vec<Insn>,
    pub log: bool,
}

impl Compiled {
    /// The program as `--seccomp-filter` carries it: hex of the
    /// `sock_filter` bytes.
    pub fn encode(&self) -> String {
        self.insns
            .iter()
            .flat_map(|i| {
                let mut b = Vec::with_capacity(Insn::SIZE);
                b.extend_from_slice(&i.code.to_le_bytes());
                b.extend_from_slice(&[i.jt, i.jf]);
                b.extend_from_slice(&i.k.to_le_bytes());
                b
            })
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// The verdict of `action` with `errno` (ERRNO's and TRACE's data; EPERM
/// when the profile gives none, as runc does).
fn verdict(action: LinuxSeccompAction, errno: Option<u32>) -> Result<u32, ProfileError> {
    let data = errno.unwrap_or(EPERM) & RET_DATA;
    Ok(match action {
        LinuxSeccompAction::ScmpActErrno => RET_ERRNO | data,
        LinuxSeccompAction::ScmpActTrace => RET_TRACE | data,
        LinuxSeccompAction::ScmpActNotify => return Err(ProfileError::Notify("SCMP_ACT_NOTIFY")),
        other => other.as_u32(None),
    })
}

const EPERM: u32 = 1;

/// Where a condition's failure jumps: the end of its rule's block,
/// patched when the block is complete.
const FAIL: u8 = u8::MAX;

/// Offsets of argument `i`'s halves in `seccomp_data`.
fn arg_words(i: usize) -> (u32, u32) {
    let lo = 16 + 8 * u32::try_from(i).unwrap_or(0);
    (lo + 4, lo)
}

fn halves(v: u64) -> (u32, u32) {
    let b = v.to_le_bytes();
    (u32::from_le_bytes([b[4], b[5], b[6], b[7]]), u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// A condition on a 64-bit argument, compared as its two 32-bit halves:
/// falls through when it holds, jumps to FAIL otherwise.
fn condition(arg: &LinuxSeccompArg) -> Vec<Insn> {
    let (hi, lo) = arg_words(arg.index());
    let (vh, vl) = halves(arg.value());
    let ld = |k| Insn::stmt(op::LD_W_ABS, k);
    let j = Insn::jump;
    match arg.op() {
        LinuxSeccompOperator::ScmpCmpEq => {
            vec![ld(hi), j(op::JEQ_K, vh, 0, FAIL), ld(lo), j(op::JEQ_K, vl, 0, FAIL)]
        }
        // Either half differs.
        LinuxSeccompOperator::ScmpCmpNe => vec![ld(hi), j(op::JEQ_K, vh, 0, 2), ld(lo), j(op::JEQ_K, vl, FAIL, 0)],
        LinuxSeccompOperator::ScmpCmpGt => {
            vec![ld(hi), j(op::JGT_K, vh, 3, 0), j(op::JEQ_K, vh, 0, FAIL), ld(lo), j(op::JGT_K, vl, 0, FAIL)]
        }
        LinuxSeccompOperator::ScmpCmpGe => {
            vec![ld(hi), j(op::JGT_K, vh, 3, 0), j(op::JEQ_K, vh, 0, FAIL), ld(lo), j(op::JGE_K, vl, 0, FAIL)]
        }
        // Not greater or equal.
        LinuxSeccompOperator::ScmpCmpLt => {
            vec![ld(hi), j(op::JGT_K, vh, FAIL, 0), j(op::JEQ_K, vh, 0, 2), ld(lo), j(op::JGE_K, vl, FAIL, 0)]
        }
        LinuxSeccompOperator::ScmpCmpLe => {
            vec![ld(hi), j(op::JGT_K, vh, FAIL, 0), j(op::JEQ_K, vh, 0, 2), ld(lo), j(op::JGT_K, vl, FAIL, 0)]
        }
        LinuxSeccompOperator::ScmpCmpMaskedEq => {
            let (mh, ml) = (vh, vl);
            // runtime-spec's valueTwo is a plain uint64 that JSON may leave
            // out (Docker's clone rule does): absent is 0, as in runc.
            let (wh, wl) = halves(arg.value_two().unwrap_or(0));
            vec![
                ld(hi),
                Insn::stmt(op::ALU_AND_K, mh),
                j(op::JEQ_K, wh, 0, FAIL),
                ld(lo),
                Insn::stmt(op::ALU_AND_K, ml),
                j(op::JEQ_K, wl, 0, FAIL),
            ]
        }
    }
}

/// One rule's block: the call number, its conditions, its verdict; any
/// failure jumps past the block.
fn block(nr: u32, conds: &[Vec<Insn>], verdict: u32) -> Vec<Insn> {
    let mut b = vec![Insn::stmt(op::LD_W_ABS, 0), Insn::jump(op::JEQ_K, nr, 0, FAIL)];
    for c in conds {
        b.extend_from_slice(c);
    }
    b.push(Insn::stmt(op::RET_K, verdict));
    let len = b.len();
    for (pc, i) in b.iter_mut().enumerate() {
        // A block is at most 2 + 6 * 6 + 1 instructions: the offset fits.
        let to_end = u8::try_from(len - pc - 1).unwrap_or(0);
        if i.code & 0x07 == 0x05 {
            if i.jt == FAIL {
                i.jt = to_end;
            }
            if i.jf == FAIL {
                i.jf = to_end;
            }
        }
    }
    b
}

/// The call number of `name`, if this sandbox knows it.
fn number(name: &str) -> Option<u32> {
    NAMES.iter().position(|n| *n == name).and_then(|nr| u32::try_from(nr).ok())
}

/// Compiles `profile`.
pub fn compile(profile: &LinuxSeccomp) -> Result<Compiled, ProfileError> {
    let mut log = false;
    for f in profile.flags().iter().flatten() {
        match f {
            LinuxSeccompFilterFlag::SeccompFilterFlagLog => log = true,
            // The sentry attaches the filter before any thread exists;
            // speculation mitigations are the host's.
            LinuxSeccompFilterFlag::SeccompFilterFlagTsync | LinuxSeccompFilterFlag::SeccompFilterFlagSpecAllow => {}
            LinuxSeccompFilterFlag::SeccompFilterFlagWaitKillableRecv => {
                return Err(ProfileError::Notify("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"))
            }
        }
    }
    let default = verdict(profile.default_action(), profile.default_errno_ret())?;
    // Guest calls are always x86-64 ones, the architecture libseccomp
    // always adds; the filter still checks it, as libseccomp's does
    // (another architecture kills), whatever `architectures` lists.
    let mut insns = vec![
        Insn::stmt(op::LD_W_ABS, 4),
        Insn::jump(op::JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        Insn::stmt(op::RET_K, RET_KILL_PROCESS),
    ];
    for (i, rule) in profile.syscalls().iter().flatten().enumerate() {
        if rule.names().is_empty() {
            return Err(ProfileError::NoNames(i));
        }
        let v = verdict(rule.action(), rule.errno_ret())?;
        let args = rule.args().clone().unwrap_or_default();
        if let Some(a) = args.iter().find(|a| a.index() > 5) {
            return Err(ProfileError::ArgIndex(i, a.index()));
        }
        let conds: Vec<Vec<Insn>> = args.iter().map(condition).collect();
        let mut indexes: Vec<usize> = args.iter().map(LinuxSeccompArg::index).collect();
        indexes.sort_unstable();
        let repeated = indexes.windows(2).any(|w| w[0] == w[1]);
        for name in rule.names() {
            let Some(nr) = number(name) else {
                log::debug!("linux.seccomp: skipping unknown system call {name:?}");
                continue;
            };
            if repeated {
                for c in &conds {
                    insns.extend(block(nr, std::slice::from_ref(c), v));
                }
            } else {
                insns.extend(block(nr, &conds, v));
            }
        }
    }
    insns.push(Insn::stmt(op::RET_K, default));
    if insns.len() > MAX_INSNS {
        return Err(ProfileError::TooLong(insns.len()));
    }
    Ok(Compiled { insns, log })
}

#[cfg(test)]
mod tests {
    use super::*;
    use husk_sentry::api::kernel::seccomp::bpf::Program;
    use husk_sentry::api::kernel::seccomp::{RET_ALLOW, RET_KILL_THREAD};

    fn profile(json: &str) -> LinuxSeccomp {
        serde_json::from_str(json).unwrap()
    }

    fn run(c: &Compiled, nr: u32, args: [u64; 6]) -> u32 {
        let p = Program::new(c.insns.clone()).expect("the compiled program passes the kernel's checks");
        let mut d = [0u8; 64];
        d[..4].copy_from_slice(&nr.to_le_bytes());
        d[4..8].copy_from_slice(&AUDIT_ARCH_X86_64.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            d[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        p.run(&d)
    }

    #[test]
    fn names_actions_and_default() {
        let c = compile(&profile(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64"],
                "syscalls":[{"names":["mkdir","mkdirat","no_such_call"],"action":"SCMP_ACT_ERRNO"},
                            {"names":["unshare"],"action":"SCMP_ACT_KILL"},
                            {"names":["getppid"],"action":"SCMP_ACT_ERRNO","errnoRet":38}]}"#,
        ))
        .unwrap();
        assert_eq!(run(&c, 83, [0; 6]), RET_ERRNO | 1);
        assert_eq!(run(&c, 258, [0; 6]), RET_ERRNO | 1);
        assert_eq!(run(&c, 272, [0; 6]), RET_KILL_THREAD);
        assert_eq!(run(&c, 110, [0; 6]), RET_ERRNO | 38);
        assert_eq!(run(&c, 39, [0; 6]), RET_ALLOW);
        assert!(!c.log);
    }

    #[test]
    fn argument_conditions_on_64_bit_values() {
        let big = 0x1_0000_0005u64;
        let json = format!(
            r#"{{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":13,"flags":["SECCOMP_FILTER_FLAG_LOG"],
                "syscalls":[
                  {{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{{"index":0,"value":{big},"op":"SCMP_CMP_EQ"}}]}},
                  {{"names":["write"],"action":"SCMP_ACT_ALLOW","args":[{{"index":2,"value":{big},"op":"SCMP_CMP_GT"}}]}},
                  {{"names":["close"],"action":"SCMP_ACT_ALLOW","args":[{{"index":0,"value":{big},"op":"SCMP_CMP_LE"}}]}},
                  {{"names":["dup"],"action":"SCMP_ACT_ALLOW","args":[{{"index":0,"value":{big},"op":"SCMP_CMP_NE"}},
                                                                       {{"index":1,"value":7,"op":"SCMP_CMP_GE"}}]}},
                  {{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{{"index":0,"value":8,"op":"SCMP_CMP_EQ"}},
                                                                               {{"index":0,"value":0,"op":"SCMP_CMP_EQ"}}]}},
                  {{"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[{{"index":0,"value":2114060288,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"}}]}},
                  {{"names":["lseek"],"action":"SCMP_ACT_ALLOW","args":[{{"index":1,"value":{big},"op":"SCMP_CMP_LT"}}]}}]}}"#
        );
        let c = compile(&profile(&json)).unwrap();
        assert!(c.log);
        let deny = RET_ERRNO | 13;
        assert_eq!(run(&c, 0, [big, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 0, [5, 0, 0, 0, 0, 0]), deny);
        assert_eq!(run(&c, 1, [0, 0, big + 1, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 1, [0, 0, big, 0, 0, 0]), deny);
        assert_eq!(run(&c, 1, [0, 0, 0x2_0000_0000, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 3, [big, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 3, [big + 1, 0, 0, 0, 0, 0]), deny);
        assert_eq!(run(&c, 3, [6, 0, 0, 0, 0, 0]), RET_ALLOW);
        // NE and GE together.
        assert_eq!(run(&c, 32, [1, 7, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 32, [1, 6, 0, 0, 0, 0]), deny);
        assert_eq!(run(&c, 32, [big, 9, 0, 0, 0, 0]), deny);
        assert_eq!(run(&c, 32, [5, 9, 0, 0, 0, 0]), RET_ALLOW);
        // The same argument twice: either value.
        assert_eq!(run(&c, 135, [8, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 135, [0, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 135, [4, 0, 0, 0, 0, 0]), deny);
        // Docker's clone rule: no namespace flag.
        assert_eq!(run(&c, 56, [0x1200011, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 56, [0x1200011 | 0x2000_0000, 0, 0, 0, 0, 0]), deny);
        assert_eq!(run(&c, 8, [0, 5, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 8, [0, big, 0, 0, 0, 0]), deny);
        assert_eq!(run(&c, 8, [0, 0x1_0000_0004, 0, 0, 0, 0]), RET_ALLOW);
    }

    #[test]
    fn malformed_profiles_are_errors() {
        let bad_index = r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW",
                             "args":[{"index":6,"value":1,"op":"SCMP_CMP_EQ"}]}]}"#;
        assert_eq!(compile(&profile(bad_index)), Err(ProfileError::ArgIndex(0, 6)));
        let notify = r#"{"defaultAction":"SCMP_ACT_NOTIFY"}"#;
        assert!(matches!(compile(&profile(notify)), Err(ProfileError::Notify(_))));
        let no_names = r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":[],"action":"SCMP_ACT_ALLOW"}]}"#;
        assert_eq!(compile(&profile(no_names)), Err(ProfileError::NoNames(0)));
        assert!(serde_json::from_str::<LinuxSeccomp>(r#"{"defaultAction":"SCMP_ACT_MAYBE"}"#).is_err());
    }

    #[test]
    fn a_masked_comparison_without_value_two_compares_with_zero() {
        // Docker writes its clone rule without valueTwo.
        let masked = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["clone"],"action":"SCMP_ACT_ALLOW",
                          "args":[{"index":0,"value":2114060288,"op":"SCMP_CMP_MASKED_EQ"}]}]}"#;
        let c = compile(&profile(masked)).unwrap();
        assert_eq!(run(&c, 56, [0x1200011, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&c, 56, [0x1200011 | 0x2000_0000, 0, 0, 0, 0, 0]), RET_ERRNO | 1);
    }

    #[test]
    fn the_encoding_is_sock_filter_bytes() {
        let c = Compiled { insns: vec![Insn::jump(op::JEQ_K, 0x0102_0304, 5, 6)], log: false };
        assert_eq!(c.encode(), "1500050604030201");
    }
}
