//! Open file descriptions: what an fd refers to, with its offset and
//! status flags (shared by dup'ed fds and across fork).

use super::dnotify::DirNotify;
use super::fasync::{Fasync, Fown, SignalOwner, UrgentSignal};
use super::{Dentry, DirEntry, FileOps, Stat};
use crate::abi::fcntl::{
    O_ACCMODE, O_APPEND, O_ASYNC, O_PATH, O_RDONLY, O_WRONLY, SEEK_CUR, SEEK_DATA, SEEK_END, SEEK_HOLE, SEEK_SET,
};
use crate::abi::Errno;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Status flags that `fcntl(F_SETFL)` may change. O_ASYNC is not among
/// them: only a file that signals takes it (`set_status_flags_via`).
pub(crate) const SETFL_MASK: u32 = (libc::O_APPEND | libc::O_NONBLOCK | libc::O_DIRECT | libc::O_NOATIME) as u32;

pub struct FileDescription {
    pub dentry: Arc<Dentry>,
    pub ops: Arc<dyn FileOps>,
    flags: AtomicU32,
    offset: Mutex<u64>,
    /// A directory's entries, snapshotted by the first getdents.
    dir_snapshot: Mutex<Option<Vec<DirEntry>>>,
    /// Run when the description goes away (its last descriptor closed):
    /// releases flock locks it holds.
    on_release: Mutex<Vec<(&'static str, ReleaseHook)>>,
    /// Something was written through it (the audit log records the
    /// first write per description).
    written: std::sync::atomic::AtomicBool,
    /// F_SETOWN(_EX), F_SETSIG and O_ASYNC: whom the file signals, and
    /// how.
    fown: Arc<Fown>,
    /// F_NOTIFY's registrations through this description.
    dir_notify: DirNotify,
    /// Last, so it runs after the dentry and the file's operations are let
    /// go: a file removed while this held it may be gone now.
    _release: super::notify::ReleaseCheck,
}

/// Work to do when a description goes away.
pub(crate) type ReleaseHook = Box<dyn FnOnce() + Send>;

impl Drop for FileDescription {
    fn drop(&mut self) {
        for (_, f) in self.on_release.get_mut().drain(..) {
            f();
        }
        if let Some(e) = self.fown.take_entry() {
            self.ops.event_unregister(&e);
        }
        if !self.is_path() {
            super::notify::closed(&self.dentry, self.writable());
        }
    }
}

impl FileDescription {
    pub fn new(dentry: Arc<Dentry>, ops: Arc<dyn FileOps>, flags: u32) -> Arc<FileDescription> {
        let release = super::notify::ReleaseCheck::of(&dentry.node);
        Arc::new(FileDescription {
            dentry,
            ops,
            flags: AtomicU32::new(flags),
            offset: Mutex::new(0),
            dir_snapshot: Mutex::new(None),
            on_release: Mutex::new(Vec::new()),
            written: std::sync::atomic::AtomicBool::new(false),
            fown: Arc::default(),
            dir_notify: DirNotify::default(),
            _release: release,
        })
    }

    /// F_GETOWN_EX: (kind, id).
    pub fn owner(&self) -> (i32, i32) {
        self.fown.who()
    }

    /// F_SETOWN_EX: records the owner, signalled through `send` (None
    /// for no owner), and tells the file whom its urgent data concerns.
    pub fn set_owner(&self, owner: (i32, i32), send: Option<SignalOwner>) {
        let urgent = send.is_some().then(|| {
            let fown = Arc::downgrade(&self.fown);
            let urgent: UrgentSignal = Arc::new(move || {
                if let Some(f) = fown.upgrade() {
                    f.urgent();
                }
            });
            urgent
        });
        self.fown.set_owner(owner, send);
        self.ops.set_signal_owner(urgent);
    }

    /// F_GETSIG: the signal O_ASYNC sends (0: SIGIO).
    pub fn io_signal(&self) -> i32 {
        self.fown.signo()
    }

    /// F_SETSIG.
    pub fn set_io_signal(&self, signo: i32) {
        self.fown.set_signo(signo);
    }

    /// Whether O_ASYNC can signal through this file (Linux's `->fasync`).
    pub fn signals_io(&self) -> bool {
        self.ops.fasync().is_some()
    }

    /// Sets the status flags, as F_SETFL; `fd` is the descriptor used,
    /// which an O_ASYNC signal reports when this turns it on. As Linux's
    /// `setfl`, O_ASYNC changes only through the file's `->fasync`: a
    /// file without it does not take the flag. Returns the file's policy
    /// when this turned O_ASYNC on.
    pub fn set_status_flags_via(&self, fd: i32, flags: u32) -> Option<Fasync> {
        let on = (flags & O_ASYNC != 0).then_some(fd);
        let enabled = self.fown.set_async(
            &self.flags,
            on,
            self.ops.fasync(),
            |e| self.ops.event_register(e),
            |e| self.ops.event_unregister(e),
        );
        self.set_status_flags(flags);
        enabled
    }

    /// F_NOTIFY with events, on a directory, by process `pid` through
    /// descriptor `fd`: the process's registration through this
    /// description gains them, signalling the owner.
    pub fn notify_dir(&self, pid: i32, fd: i32, arg: u32) -> Result<(), Errno> {
        self.dir_notify.add(pid, fd, arg, self.dentry.node.as_ref(), &self.fown)
    }

    /// Process `pid` closed a descriptor of this description, or called
    /// F_NOTIFY without events: its registration goes (Linux's
    /// `dnotify_flush`, at every close).
    pub fn closed_by(&self, pid: i32) {
        self.dir_notify.remove(pid);
    }

    /// Whether this is the first write through the description.
    pub fn first_write(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        !self.written.load(Relaxed) && !self.written.swap(true, Relaxed)
    }

    /// Runs `f` when the description is released; a second hook with the
    /// same `key` is dropped.
    pub fn on_release(&self, key: &'static str, f: ReleaseHook) {
        let mut hooks = self.on_release.lock();
        if !hooks.iter().any(|(k, _)| *k == key) {
            hooks.push((key, f));
        }
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    pub fn set_status_flags(&self, flags: u32) {
        // One atomic update: a concurrent O_ASYNC change is kept.
        let set = |old| Some((old & !SETFL_MASK) | (flags & SETFL_MASK));
        let _ = self.flags.fetch_update(Ordering::Relaxed, Ordering::Relaxed, set);
    }

    fn access(&self) -> u32 {
        self.flags() & O_ACCMODE
    }

    pub fn readable(&self) -> bool {
        self.access() != O_WRONLY && self.flags() & O_PATH == 0
    }

    pub fn writable(&self) -> bool {
        self.access() != O_RDONLY && self.flags() & O_PATH == 0
    }

    pub fn is_path(&self) -> bool {
        self.flags() & O_PATH != 0
    }

    pub fn stat(&self) -> Result<Stat, Errno> {
        self.dentry.node.stat()
    }

    pub fn offset(&self) -> u64 {
        *self.offset.lock()
    }

    /// Runs a read at the file position and advances the position by
    /// what it reports done. The position lock is held throughout, as
    /// Linux's f_pos lock is.
    pub fn positioned(&self, io: impl FnOnce(u64) -> Result<u64, Errno>) -> Result<u64, Errno> {
        let mut off = self.offset.lock();
        let n = io(*off)?;
        *off += n;
        Ok(n)
    }

    /// Runs one write call at the file position or, with `append`, at the
    /// end of the file, and moves the position past what it wrote. `io`
    /// writes its chunks in order through the [`Cursor`]. The position
    /// lock is held throughout, as Linux's f_pos lock is.
    pub fn positioned_write(
        &self,
        append: bool,
        io: impl FnOnce(&mut Cursor<'_>) -> Result<u64, Errno>,
    ) -> Result<u64, Errno> {
        let mut off = self.offset.lock();
        let mut cursor = Cursor { f: self, append, at: (!append).then_some(*off) };
        let n = io(&mut cursor)?;
        if let Some(at) = cursor.at.filter(|_| n > 0) {
            *off = at;
        }
        Ok(n)
    }

    /// Runs one write call at `off` or, with `append`, at the end of the
    /// file, leaving the file position where it is (pwrite(2)). The
    /// position lock is held for an append all the same: a file's own
    /// append ([`FileOps::append`]) may keep its end there.
    pub fn write_at(
        &self,
        append: bool,
        off: u64,
        io: impl FnOnce(&mut Cursor<'_>) -> Result<u64, Errno>,
    ) -> Result<u64, Errno> {
        let _position = append.then(|| self.offset.lock());
        io(&mut Cursor { f: self, append, at: (!append).then_some(off) })
    }

    /// Whether writes go to the end of the file.
    pub fn appends(&self) -> bool {
        self.flags() & O_APPEND != 0
    }

    /// Reads at the file position, advancing it.
    /// One attempt of a stream's read call (`FileOps::read_call`).
    pub fn read_call(&self, buf: &mut [u8], call: &mut super::ReadCall) -> Result<usize, Errno> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        if !self.ops.seekable() {
            return self.ops.read_call(buf, call);
        }
        self.read(buf)
    }

    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        if !self.ops.seekable() {
            return self.ops.read(buf, 0);
        }
        let mut off = self.offset.lock();
        let n = self.ops.read(buf, *off)?;
        *off += n as u64;
        Ok(n)
    }

    /// Writes at the file position (or the end, with O_APPEND), advancing it.
    pub fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        if !self.ops.seekable() {
            return self.ops.write(buf, 0);
        }
        let n = self.positioned_write(self.appends(), |c| c.write(buf).map(|n| n as u64))?;
        usize::try_from(n).map_err(|_| Errno::EOVERFLOW)
    }

    pub fn pread(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        if !self.ops.seekable() {
            return Err(Errno::ESPIPE);
        }
        self.ops.read(buf, off)
    }

    pub fn pwrite(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        if !self.ops.seekable() {
            return Err(Errno::ESPIPE);
        }
        // Linux appends even for pwrite on an O_APPEND file.
        let n = self.write_at(self.appends(), off, |c| c.write(buf).map(|n| n as u64))?;
        usize::try_from(n).map_err(|_| Errno::EOVERFLOW)
    }

    /// `lseek`.
    pub fn seek(&self, off: i64, whence: u32) -> Result<u64, Errno> {
        if !self.ops.seekable() {
            return Err(Errno::ESPIPE);
        }
        if matches!(whence, SEEK_END | SEEK_DATA | SEEK_HOLE) && !self.ops.seeks_from_end() {
            return Err(Errno::EINVAL);
        }
        let mut cur = self.offset.lock();
        let base: i64 = match whence {
            SEEK_SET => 0,
            SEEK_CUR => i64::try_from(*cur).map_err(|_| Errno::EOVERFLOW)?,
            SEEK_END => i64::try_from(self.stat()?.size).map_err(|_| Errno::EOVERFLOW)?,
            // Every byte is data.
            SEEK_DATA | SEEK_HOLE => {
                let size = i64::try_from(self.stat()?.size).map_err(|_| Errno::EOVERFLOW)?;
                if off < 0 || off >= size {
                    return Err(Errno::ENXIO);
                }
                let pos = if whence == SEEK_DATA { off } else { size };
                *cur = u64::try_from(pos).map_err(|_| Errno::EINVAL)?;
                return Ok(*cur);
            }
            _ => return Err(Errno::EINVAL),
        };
        let new = base.checked_add(off).ok_or(Errno::EINVAL)?;
        let new = u64::try_from(new).map_err(|_| Errno::EINVAL)?;
        *cur = new;
        if self.dentry.is_dir() && new == 0 {
            *self.dir_snapshot.lock() = None;
        }
        Ok(new)
    }

    /// Reads directory entries from the current position on (including
    /// "." and ".."): `take` is told each entry with the position after it
    /// and returns false when its buffer is full. `commit` then runs with
    /// the position reached and decides, by succeeding, whether the
    /// position moves there (a failed copy to the guest leaves it).
    pub fn read_dir<R>(
        &self,
        parent_ino: u64,
        mut take: impl FnMut(&DirEntry, u64) -> bool,
        commit: impl FnOnce() -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let st = self.stat()?;
        let mut snap = self.dir_snapshot.lock();
        let mut off = self.offset.lock();
        if snap.is_none() || *off == 0 {
            let mut entries = vec![
                DirEntry { ino: st.ino, kind: libc::DT_DIR, name: b".".to_vec() },
                DirEntry { ino: parent_ino, kind: libc::DT_DIR, name: b"..".to_vec() },
            ];
            entries.extend(self.dentry.node.readdir()?);
            *snap = Some(entries);
        }
        let entries = snap.as_ref().map(Vec::as_slice).unwrap_or_default();
        let start = usize::try_from(*off).unwrap_or(usize::MAX);
        let mut reached = *off;
        for (i, e) in entries.iter().enumerate().skip(start) {
            let next = i as u64 + 1;
            if !take(e, next) {
                break;
            }
            reached = next;
        }
        let r = commit()?;
        *off = reached;
        super::notify::file_event(&self.dentry, super::notify::IN_ACCESS);
        Ok(r)
    }
}

/// Where the chunks of one write call go: on from an offset, or each to
/// the end of the file.
pub struct Cursor<'a> {
    f: &'a FileDescription,
    append: bool,
    /// Where the next chunk goes; `None` until an append learns the end.
    at: Option<u64>,
}

impl Cursor<'_> {
    /// Where the next chunk goes: the file position, or for an append the
    /// file's current size.
    pub fn position(&self) -> Result<u64, Errno> {
        match self.at {
            Some(at) => Ok(at),
            None => Ok(self.f.stat()?.size),
        }
    }

    /// Writes the call's next chunk. An append is the file's own where it
    /// has one (a host file: at the host's end, even if the host wrote
    /// meanwhile), else at the size the file has when the call begins.
    pub fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        if self.append {
            if let Some(r) = self.f.ops.append(buf) {
                let (n, end) = r?;
                self.at = Some(end);
                return Ok(n);
            }
        }
        let at = match self.at {
            Some(at) => at,
            None => self.f.stat()?.size,
        };
        let n = self.f.ops.write(buf, at)?;
        self.at = Some(at + n as u64);
        Ok(n)
    }
}

/// The operations of an open directory, for every filesystem: its entries
/// are read through the node (`getdents`), so `read` and `write` fail with
/// `EISDIR` as Linux's `generic_read_dir` does.
pub(crate) struct DirFile;

impl FileOps for DirFile {
    fn read(&self, _buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        Err(Errno::EISDIR)
    }

    fn write(&self, _buf: &[u8], _off: u64) -> Result<usize, Errno> {
        Err(Errno::EISDIR)
    }
}
