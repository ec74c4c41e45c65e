//! /proc/[pid]/mem: the process's address space as a file whose offsets
//! are addresses. As Linux's `mem_rw`: opening needs ptrace access to the
//! process (EACCES), the file keeps the address space it was opened on
//! (reads and writes find nothing once that is gone: the process exited
//! or exec'd), I/O goes page by page as a debugger's does (whatever the
//! protection) and stops at the first unmapped page (EIO if it is the
//! first), and only SEEK_SET and SEEK_CUR move it.

use super::task::TaskRef;
use crate::abi::{Errno, PAGE_SIZE};
use crate::fs::synthetic::Attr;
use crate::mm::MemoryManager;
use crate::vfs::{FileOps, Node, Stat, StatFs};
use std::sync::{Arc, Weak};

/// The /proc/[pid]/mem node.
pub(super) struct MemNode {
    pub(super) attr: Attr,
    pub(super) task: TaskRef,
}

impl Node for MemNode {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn open(&self, _flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let (_, t) = self.task.get()?;
        if let Some(reader) = crate::kernel::thread::current() {
            let dumpable = t.group().dumpable() != 0;
            if reader.tgid() != t.tgid() && !reader.creds().may_read_process(&t.creds(), dumpable) {
                return Err(Errno::EACCES);
            }
        }
        Ok(Arc::new(MemFile { mm: Arc::downgrade(&t.mm()) }))
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(self.attr.fs.statfs())
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An open /proc/[pid]/mem.
struct MemFile {
    mm: Weak<MemoryManager>,
}

/// Runs `io` on each page-bounded piece of `len` bytes at `addr` (its
/// offset into the buffer, address and length) until one fails: the bytes
/// done, or EIO if none were.
fn by_page(addr: u64, len: usize, mut io: impl FnMut(usize, u64, usize) -> bool) -> Result<usize, Errno> {
    let mut done = 0usize;
    while done < len {
        let Some(at) = addr.checked_add(done as u64) else { break };
        let room = usize::try_from(PAGE_SIZE - at % PAGE_SIZE).unwrap_or(usize::MAX);
        let n = room.min(len - done);
        if !io(done, at, n) {
            break;
        }
        done += n;
    }
    if done == 0 && len > 0 {
        return Err(Errno::EIO);
    }
    Ok(done)
}

impl FileOps for MemFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        let Some(mm) = self.mm.upgrade() else { return Ok(0) };
        by_page(off, buf.len(), |at, addr, n| mm.copy_in_forced(addr, &mut buf[at..at + n]).is_ok())
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        let Some(mm) = self.mm.upgrade() else { return Ok(0) };
        by_page(off, buf.len(), |at, addr, n| mm.copy_out_forced(addr, &buf[at..at + n]).is_ok())
    }

    fn seeks_from_end(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_goes_page_by_page_and_stops_at_a_bad_page() {
        let mut pieces = Vec::new();
        let got = by_page(PAGE_SIZE - 2, 10, |at, addr, n| {
            pieces.push((at, addr, n));
            true
        });
        assert_eq!(got, Ok(10));
        assert_eq!(pieces, vec![(0, PAGE_SIZE - 2, 2), (2, PAGE_SIZE, 8)]);
        assert_eq!(by_page(PAGE_SIZE - 1, 4096, |_, addr, _| addr < PAGE_SIZE), Ok(1));
        assert_eq!(by_page(0, 8, |_, _, _| false), Err(Errno::EIO));
        assert_eq!(by_page(0, 0, |_, _, _| false), Ok(0));
        assert_eq!(by_page(u64::MAX, 8, |_, _, _| true), Ok(1));
    }
}
