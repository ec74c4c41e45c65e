//! Classic BPF as seccomp runs it: a guest's program is checked once, as
//! Linux's `bpf_check_classic` and `seccomp_check_filter` do, and then
//! interpreted against a `seccomp_data` on every system call.
//!
//! The program is guest input. A checked program only jumps forward and
//! ends every path with a return, so a run takes at most as many steps as
//! the program has instructions; loads read only the 64-byte
//! `seccomp_data`, and the scratch memory is read only where every path
//! wrote it first.

/// `BPF_MAXINSNS`: the longest program.
pub const MAX_INSNS: usize = 4096;
/// `BPF_MEMWORDS`: the scratch memory's words.
const MEM_WORDS: usize = 16;
/// `sizeof(struct seccomp_data)`.
pub(crate) const DATA_LEN: u32 = 64;

// Instruction classes and fields (linux/bpf_common.h).
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const STX: u16 = 0x03;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;
const W: u16 = 0x00;
const IMM: u16 = 0x00;
const ABS: u16 = 0x20;
const MEM: u16 = 0x60;
const LEN: u16 = 0x80;
const ADD: u16 = 0x00;
const SUB: u16 = 0x10;
const MUL: u16 = 0x20;
const DIV: u16 = 0x30;
const OR: u16 = 0x40;
const AND: u16 = 0x50;
const LSH: u16 = 0x60;
const RSH: u16 = 0x70;
const NEG: u16 = 0x80;
const XOR: u16 = 0xa0;
const JA: u16 = 0x00;
const JEQ: u16 = 0x10;
const JGT: u16 = 0x20;
const JGE: u16 = 0x30;
const JSET: u16 = 0x40;
const K: u16 = 0x00;
const X: u16 = 0x08;
const A: u16 = 0x10;
const TAX: u16 = 0x00;
const TXA: u16 = 0x80;

/// One `struct sock_filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

impl Insn {
    pub const SIZE: usize = 8;

    /// The instructions of a `sock_filter` array's bytes (a trailing
    /// partial instruction is left out).
    pub fn decode_all(raw: &[u8]) -> Vec<Insn> {
        raw.chunks_exact(Self::SIZE)
            .map(|c| {
                let mut b = [0u8; Self::SIZE];
                b.copy_from_slice(c);
                Insn::decode(&b)
            })
            .collect()
    }

    /// An instruction from its 8 bytes in guest memory.
    pub fn decode(b: &[u8; Self::SIZE]) -> Insn {
        Insn {
            code: u16::from_le_bytes([b[0], b[1]]),
            jt: b[2],
            jf: b[3],
            k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    pub const fn stmt(code: u16, k: u32) -> Insn {
        Insn { code, jt: 0, jf: 0, k }
    }

    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn { code, jt, jf, k }
    }
}

/// Opcodes a program builder needs (the runtime's profile compiler and
/// the tests).
pub mod op {
    use super::*;
    pub const LD_W_ABS: u16 = LD | W | ABS;
    pub const LD_IMM: u16 = LD | IMM;
    pub const LDX_IMM: u16 = LDX | IMM;
    pub const LD_MEM: u16 = LD | MEM;
    pub const ST_A: u16 = super::ST;
    pub const ALU_AND_K: u16 = ALU | AND | K;
    pub const ALU_DIV_X: u16 = ALU | DIV | X;
    pub const JMP_JA: u16 = JMP | super::JA;
    pub const JEQ_K: u16 = JMP | JEQ | K;
    pub const JGT_K: u16 = JMP | JGT | K;
    pub const JGE_K: u16 = JMP | JGE | K;
    pub const JSET_K: u16 = JMP | JSET | K;
    pub const RET_K: u16 = RET | K;
    pub const RET_A: u16 = RET | A;
}

/// Why a program was refused (Linux answers EINVAL for all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("a program has 1 to {MAX_INSNS} instructions")]
    Length,
    #[error("instruction {0} is not one seccomp allows")]
    Opcode(usize),
    #[error("instruction {0} divides by a constant zero or shifts by 32 or more")]
    Constant(usize),
    #[error("instruction {0} loads outside seccomp_data or unaligned")]
    Load(usize),
    #[error("instruction {0} names a scratch word past the 16th")]
    Memory(usize),
    #[error("instruction {0} jumps past the end")]
    Jump(usize),
    #[error("the last instruction does not return")]
    NoReturn,
    #[error("instruction {0} reads a scratch word some path never wrote")]
    Uninitialized(usize),
}

/// A program that passed the checks: only this can be run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program(Vec<Insn>);

impl Program {
    /// Checks `insns` as Linux does before it accepts a seccomp filter.
    pub fn new(insns: Vec<Insn>) -> Result<Program, CheckError> {
        check(&insns)?;
        Ok(Program(insns))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Runs the program on `data` (a `seccomp_data`) and returns its
    /// verdict. Every jump is forward, so this ends within `len` steps.
    pub fn run(&self, data: &[u8; DATA_LEN as usize]) -> u32 {
        let (mut a, mut x) = (0u32, 0u32);
        let mut mem = [0u32; MEM_WORDS];
        let mut pc = 0usize;
        while let Some(i) = self.0.get(pc) {
            pc += 1;
            let k = i.k;
            let src = if i.code & X != 0 { x } else { k };
            match i.code {
                c if c == LD | W | ABS => a = word(data, k),
                c if c == LD | W | LEN => a = DATA_LEN,
                c if c == LDX | W | LEN => x = DATA_LEN,
                c if c == LD | IMM => a = k,
                c if c == LDX | IMM => x = k,
                c if c == LD | MEM => a = mem_word(&mem, k),
                c if c == LDX | MEM => x = mem_word(&mem, k),
                c if c == ST => set_mem(&mut mem, k, a),
                c if c == STX => set_mem(&mut mem, k, x),
                c if c == MISC | TAX => x = a,
                c if c == MISC | TXA => a = x,
                c if c == RET | K => return k,
                c if c == RET | A => return a,
                c if c == ALU | NEG => a = a.wrapping_neg(),
                c if c & 0x07 == ALU => match c & 0xf0 {
                    ADD => a = a.wrapping_add(src),
                    SUB => a = a.wrapping_sub(src),
                    MUL => a = a.wrapping_mul(src),
                    // Classic BPF: dividing by a zero X ends the program
                    // with 0 (the checker refused a constant zero).
                    DIV => match a.checked_div(src) {
                        Some(q) => a = q,
                        None => return 0,
                    },
                    OR => a |= src,
                    AND => a &= src,
                    XOR => a ^= src,
                    LSH => a = a.checked_shl(src).unwrap_or(0),
                    RSH => a = a.checked_shr(src).unwrap_or(0),
                    _ => return 0,
                },
                c if c == JMP | JA => pc = pc.saturating_add(k as usize),
                c if c & 0x07 == JMP => {
                    let taken = match c & 0xf0 {
                        JEQ => a == src,
                        JGT => a > src,
                        JGE => a >= src,
                        JSET => a & src != 0,
                        _ => return 0,
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                // Unreachable for a checked program; kill rather than go on.
                _ => return 0,
            }
        }
        0
    }
}

fn word(data: &[u8; DATA_LEN as usize], k: u32) -> u32 {
    let at = k as usize;
    match data.get(at..at + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

fn mem_word(mem: &[u32; MEM_WORDS], k: u32) -> u32 {
    mem.get(k as usize).copied().unwrap_or(0)
}

fn set_mem(mem: &mut [u32; MEM_WORDS], k: u32, v: u32) {
    if let Some(w) = mem.get_mut(k as usize) {
        *w = v;
    }
}

/// Whether seccomp takes `code` at all (`seccomp_check_filter`'s list).
fn allowed(code: u16) -> bool {
    const ALU_OPS: [u16; 9] = [ADD, SUB, MUL, DIV, AND, OR, XOR, LSH, RSH];
    match code & 0x07 {
        LD => [LD | W | ABS, LD | W | LEN, LD | IMM, LD | MEM].contains(&code),
        LDX => [LDX | W | LEN, LDX | IMM, LDX | MEM].contains(&code),
        ST | STX => code == ST || code == STX,
        ALU => code == ALU | NEG || (ALU_OPS.contains(&(code & 0xf0)) && code & !0xf8 == ALU),
        JMP => code == JMP | JA || ([JEQ, JGT, JGE, JSET].contains(&(code & 0xf0)) && code & !0xf8 == JMP),
        RET => code == RET | K || code == RET | A,
        MISC => code == MISC | TAX || code == MISC | TXA,
        _ => false,
    }
}

fn check(insns: &[Insn]) -> Result<(), CheckError> {
    let len = insns.len();
    if len == 0 || len > MAX_INSNS {
        return Err(CheckError::Length);
    }
    for (pc, i) in insns.iter().enumerate() {
        if !allowed(i.code) {
            return Err(CheckError::Opcode(pc));
        }
        let class = i.code & 0x07;
        let k = i.k as usize;
        let rest = len - pc - 1;
        let bad = match i.code {
            c if c == LD | W | ABS => (i.k % 4 != 0 || i.k >= DATA_LEN).then_some(CheckError::Load(pc)),
            c if c == ALU | DIV | K => (i.k == 0).then_some(CheckError::Constant(pc)),
            c if c == ALU | LSH | K || c == ALU | RSH | K => (i.k >= 32).then_some(CheckError::Constant(pc)),
            c if c == LD | MEM || c == LDX | MEM || class == ST || class == STX => {
                (k >= MEM_WORDS).then_some(CheckError::Memory(pc))
            }
            c if c == JMP | JA => (k >= rest).then_some(CheckError::Jump(pc)),
            _ if class == JMP => {
                (usize::from(i.jt) >= rest || usize::from(i.jf) >= rest).then_some(CheckError::Jump(pc))
            }
            _ => None,
        };
        if let Some(e) = bad {
            return Err(e);
        }
    }
    if insns[len - 1].code & 0x07 != RET {
        return Err(CheckError::NoReturn);
    }
    check_scratch(insns)
}

/// Linux's `check_load_and_stores`: a scratch word may be read only where
/// every path to the read stored it first.
fn check_scratch(insns: &[Insn]) -> Result<(), CheckError> {
    const ALL: u16 = 0xffff;
    // The words known written at each instruction's entry; ALL until a
    // path reaches it.
    let mut known = vec![ALL; insns.len()];
    known[0] = 0;
    for (pc, i) in insns.iter().enumerate() {
        let mut m = known[pc];
        let class = i.code & 0x07;
        if class == ST || class == STX {
            m |= 1 << i.k;
        }
        if (i.code == LD | MEM || i.code == LDX | MEM) && m & (1 << i.k) == 0 {
            return Err(CheckError::Uninitialized(pc));
        }
        if class == JMP {
            if i.code == JMP | JA {
                let t = pc + 1 + i.k as usize;
                known[t] &= m;
            } else {
                known[pc + 1 + usize::from(i.jt)] &= m;
                known[pc + 1 + usize::from(i.jf)] &= m;
            }
            continue;
        }
        if class != RET {
            known[pc + 1] &= m;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::op::*;
    use super::*;

    fn data(nr: u32, arg0: u64) -> [u8; DATA_LEN as usize] {
        let mut d = [0u8; DATA_LEN as usize];
        d[..4].copy_from_slice(&nr.to_le_bytes());
        d[4..8].copy_from_slice(&0xc000_003eu32.to_le_bytes());
        d[16..24].copy_from_slice(&arg0.to_le_bytes());
        d
    }

    const ALLOW: u32 = 0x7fff_0000;
    const EPERM: u32 = 0x0005_0001;

    /// nr == 83 (mkdir) ? ERRNO(EPERM) : ALLOW
    fn deny_mkdir() -> Program {
        Program::new(vec![
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JEQ_K, 83, 0, 1),
            Insn::stmt(RET_K, EPERM),
            Insn::stmt(RET_K, ALLOW),
        ])
        .unwrap()
    }

    #[test]
    fn a_program_decides_by_the_call_number() {
        let p = deny_mkdir();
        assert_eq!(p.run(&data(83, 0)), EPERM);
        assert_eq!(p.run(&data(84, 0)), ALLOW);
    }

    #[test]
    fn arguments_scratch_memory_and_alu() {
        // A = arg0 low word & 0xff; M[3] = A; X = 2; A = M[3] / X; ret A
        let p = Program::new(vec![
            Insn::stmt(LD_W_ABS, 16),
            Insn::stmt(ALU_AND_K, 0xff),
            Insn::stmt(ST_A, 3),
            Insn::stmt(LDX_IMM, 2),
            Insn::stmt(LD_MEM, 3),
            Insn::stmt(ALU_DIV_X, 0),
            Insn::stmt(RET_A, 0),
        ])
        .unwrap();
        assert_eq!(p.run(&data(0, 0x1234_5678_0000_01f0)), 0xf0 / 2);
    }

    #[test]
    fn division_by_a_zero_register_returns_zero() {
        let p = Program::new(vec![
            Insn::stmt(LD_IMM, 7),
            Insn::stmt(LDX_IMM, 0),
            Insn::stmt(ALU_DIV_X, 0),
            Insn::stmt(RET_K, ALLOW),
        ])
        .unwrap();
        assert_eq!(p.run(&data(0, 0)), 0);
    }

    #[test]
    fn malformed_programs_are_refused() {
        let ret = Insn::stmt(RET_K, ALLOW);
        assert_eq!(Program::new(vec![]), Err(CheckError::Length));
        assert_eq!(Program::new(vec![ret; MAX_INSNS + 1]), Err(CheckError::Length));
        assert!(Program::new(vec![ret; MAX_INSNS]).is_ok());
        // BPF_LD|BPF_B|BPF_ABS: byte loads are not seccomp's.
        assert_eq!(Program::new(vec![Insn::stmt(0x30, 0), ret]), Err(CheckError::Opcode(0)));
        // BPF_LD|BPF_W|BPF_IND.
        assert_eq!(Program::new(vec![Insn::stmt(0x40, 0), ret]), Err(CheckError::Opcode(0)));
        assert_eq!(Program::new(vec![Insn::stmt(0xffff, 0), ret]), Err(CheckError::Opcode(0)));
        assert_eq!(Program::new(vec![Insn::stmt(LD_W_ABS, 64), ret]), Err(CheckError::Load(0)));
        assert_eq!(Program::new(vec![Insn::stmt(LD_W_ABS, 2), ret]), Err(CheckError::Load(0)));
        assert_eq!(Program::new(vec![Insn::stmt(0x34, 0), ret]), Err(CheckError::Constant(0)));
        assert_eq!(Program::new(vec![Insn::stmt(0x64, 32), ret]), Err(CheckError::Constant(0)));
        assert_eq!(Program::new(vec![Insn::stmt(ST_A, 16), ret]), Err(CheckError::Memory(0)));
        assert_eq!(Program::new(vec![Insn::stmt(JMP_JA, 1), ret]), Err(CheckError::Jump(0)));
        // A backward jump would need k = u32::MAX - n: past the end.
        assert_eq!(Program::new(vec![ret, Insn::stmt(JMP_JA, u32::MAX), ret]), Err(CheckError::Jump(1)));
        assert_eq!(Program::new(vec![Insn::jump(JEQ_K, 0, 1, 0), ret]), Err(CheckError::Jump(0)));
        assert_eq!(Program::new(vec![Insn::stmt(LD_IMM, 0)]), Err(CheckError::NoReturn));
        assert_eq!(Program::new(vec![Insn::stmt(LD_MEM, 0), ret]), Err(CheckError::Uninitialized(0)));
    }

    #[test]
    fn scratch_words_must_be_written_on_every_path() {
        // Only the taken branch stores M[0]; the join reads it.
        let one_path = vec![
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JEQ_K, 1, 0, 1),
            Insn::stmt(ST_A, 0),
            Insn::stmt(LD_MEM, 0),
            Insn::stmt(RET_A, 0),
        ];
        assert_eq!(Program::new(one_path), Err(CheckError::Uninitialized(3)));
        let both = vec![
            Insn::stmt(ST_A, 0),
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JEQ_K, 1, 0, 1),
            Insn::stmt(ST_A, 0),
            Insn::stmt(LD_MEM, 0),
            Insn::stmt(RET_A, 0),
        ];
        assert!(Program::new(both).is_ok());
    }

    #[test]
    fn the_longest_program_runs_in_bounded_steps() {
        // Every instruction a conditional jump that skips nothing: 4095
        // steps, then the return.
        let mut v = vec![Insn::jump(JGE_K, 0, 0, 0); MAX_INSNS - 1];
        v.push(Insn::stmt(RET_K, ALLOW));
        assert_eq!(Program::new(v).unwrap().run(&data(1, 0)), ALLOW);
    }

    #[test]
    fn hostile_programs_neither_panic_nor_run_long() {
        // Random instructions, biased toward valid classes: whatever the
        // checker accepts runs to a verdict within its length.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut accepted = 0;
        for _ in 0..20_000 {
            let n = usize::from(next().to_le_bytes()[0] % 8 + 1);
            let mut v: Vec<Insn> = (0..n)
                .map(|_| {
                    let r = next().to_le_bytes();
                    Insn { code: u16::from(r[0]), jt: r[1] % 4, jf: r[2] % 4, k: u32::from(r[4]) % 80 }
                })
                .collect();
            if next() % 2 == 0 {
                v.push(Insn::stmt(RET_A, 0));
            }
            if let Ok(p) = Program::new(v) {
                accepted += 1;
                let _ = p.run(&data(u32::from(next().to_le_bytes()[0]), next()));
            }
        }
        assert!(accepted > 100, "only {accepted} programs passed the checks");
    }
}
