//! The seccomp listener descriptor (`anon_inode:seccomp notify`), which
//! `seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)` returns: its ioctls
//! receive and answer the filter's user notifications, and poll reports
//! them (the kernel's `seccomp::notify::Listener` keeps them).

use crate::abi::poll::{POLLIN, POLLRDNORM};
use crate::abi::Errno;
use crate::kernel::seccomp::notify::{AddFd, Answer, Listener, FLAG_CONTINUE, NOTIF_SIZE};
use crate::vfs::{FileOps, IoctlContext, TimeSpec};
use crate::waiter::{until_ready, Entry};
use std::sync::Arc;

/// `SECCOMP_IOCTL_NOTIF_RECV`: `_IOWR('!', 0, struct seccomp_notif)`.
const NOTIF_RECV: u64 = 0xc050_2100;
/// `SECCOMP_IOCTL_NOTIF_SEND`: `_IOWR('!', 1, struct seccomp_notif_resp)`.
const NOTIF_SEND: u64 = 0xc018_2101;
/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: `_IOW('!', 2, __u64)`, and the `_IOR`
/// number it first had, which Linux still accepts.
const NOTIF_ID_VALID: u64 = 0x4008_2102;
const NOTIF_ID_VALID_WRONG_DIR: u64 = 0x8008_2102;
/// `sizeof(struct seccomp_notif_resp)`.
const RESP_SIZE: usize = 24;
/// `SECCOMP_IOCTL_NOTIF_ADDFD`: `_IOW('!', 3, struct seccomp_notif_addfd)`,
/// matched, as Linux, whatever size the request carries (the struct may
/// grow): its number with the size bits cleared.
const NOTIF_ADDFD_SIZELESS: u64 = 0x4000_2103;
/// The size bits of an ioctl request.
const IOC_SIZE_MASK: u64 = 0x3fff << 16;
/// `SECCOMP_NOTIFY_ADDFD_SIZE_VER0`.
const ADDFD_SIZE_VER0: usize = 24;
/// The largest `struct seccomp_notif_addfd` accepted (below a page).
const ADDFD_SIZE_MAX: usize = 4095;
/// `SECCOMP_ADDFD_FLAG_SETFD`, `SECCOMP_ADDFD_FLAG_SEND`.
const ADDFD_FLAG_SETFD: u32 = 1;
const ADDFD_FLAG_SEND: u32 = 2;
/// `O_CLOEXEC`, the one flag `newfd_flags` may carry.
const O_CLOEXEC: u32 = 0o2_000_000;

pub(crate) struct NotifyFile {
    ino: u64,
    created: TimeSpec,
    listener: Arc<Listener>,
}

impl NotifyFile {
    pub(crate) fn new(ino: u64, created: TimeSpec, listener: Arc<Listener>) -> Arc<NotifyFile> {
        Arc::new(NotifyFile { ino, created, listener })
    }

    /// NOTIF_RECV: waits (interruptibly, whatever O_NONBLOCK says, as
    /// Linux) for a notification and copies it out. The buffer must be
    /// zeroed (EINVAL), so the struct can grow.
    fn recv(&self, ctx: &dyn IoctlContext, arg: u64) -> Result<u64, Errno> {
        let mut buf = [0u8; NOTIF_SIZE];
        ctx.mm().copy_in(arg, &mut buf)?;
        if buf.iter().any(|&b| b != 0) {
            return Err(Errno::EINVAL);
        }
        let (id, notif) = until_ready(self.listener.queue(), POLLIN | POLLRDNORM, None, || self.listener.recv())?;
        if let Err(e) = ctx.mm().copy_out(arg, &notif) {
            self.listener.unrecv(id);
            return Err(e);
        }
        Ok(0)
    }

    /// NOTIF_SEND: `struct seccomp_notif_resp` {id, val, error, flags}.
    fn send(&self, ctx: &dyn IoctlContext, arg: u64) -> Result<u64, Errno> {
        let mut buf = [0u8; RESP_SIZE];
        ctx.mm().copy_in(arg, &mut buf)?;
        let word = |at: usize| u64::from_le_bytes(buf[at..at + 8].try_into().unwrap_or_default());
        let half = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().unwrap_or_default());
        let (id, val) = (word(0), i64::from_ne_bytes(word(8).to_ne_bytes()));
        let (error, flags) = (i32::from_ne_bytes(half(16).to_ne_bytes()), half(20));
        if flags & !FLAG_CONTINUE != 0 {
            return Err(Errno::EINVAL);
        }
        let answer = if flags & FLAG_CONTINUE != 0 {
            if error != 0 || val != 0 {
                return Err(Errno::EINVAL);
            }
            Answer::Continue
        } else {
            Answer::Result { val, error }
        };
        self.listener.answer(id, answer).map(|()| 0)
    }

    /// NOTIF_ADDFD: `struct seccomp_notif_addfd` {id, flags, srcfd, newfd,
    /// newfd_flags} of `size` bytes (any bytes past the known ones must be
    /// zero: E2BIG); the new number in the notifying thread's table.
    fn add_fd(&self, ctx: &dyn IoctlContext, arg: u64, size: usize) -> Result<u64, Errno> {
        if !(ADDFD_SIZE_VER0..=ADDFD_SIZE_MAX).contains(&size) {
            return Err(Errno::EINVAL);
        }
        let mut buf = vec![0u8; size];
        ctx.mm().copy_in(arg, &mut buf)?;
        if buf[ADDFD_SIZE_VER0..].iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
        let half = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().unwrap_or_default());
        let id = u64::from_le_bytes(buf[..8].try_into().unwrap_or_default());
        let (flags, srcfd, newfd, newfd_flags) = (half(8), half(12), half(16), half(20));
        if newfd_flags & !O_CLOEXEC != 0 || flags & !(ADDFD_FLAG_SETFD | ADDFD_FLAG_SEND) != 0 {
            return Err(Errno::EINVAL);
        }
        if newfd != 0 && flags & ADDFD_FLAG_SETFD == 0 {
            return Err(Errno::EINVAL);
        }
        let file = ctx.file(i32::try_from(srcfd).map_err(|_| Errno::EBADF)?)?;
        // A number past i32 is past any RLIMIT_NOFILE: EBADF, as dup2.
        let at = (flags & ADDFD_FLAG_SETFD != 0).then(|| i32::try_from(newfd).unwrap_or(-1));
        let add = AddFd { file, at, cloexec: newfd_flags & O_CLOEXEC != 0, send: flags & ADDFD_FLAG_SEND != 0 };
        let fd = self.listener.add_fd(id, add)?;
        u64::try_from(fd).map_err(|_| Errno::EBADF)
    }
}

impl Drop for NotifyFile {
    /// The last descriptor is closed: the calls waiting fail with ENOSYS.
    fn drop(&mut self) {
        self.listener.close();
    }
}

super::anon::anon_inode_node!(NotifyFile, usize::MAX - 4);

impl FileOps for NotifyFile {
    fn seekable(&self) -> bool {
        false
    }

    /// Any other request fails with EINVAL, as Linux's unknown ones.
    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        if req & !IOC_SIZE_MASK == NOTIF_ADDFD_SIZELESS {
            let size = usize::try_from((req & IOC_SIZE_MASK) >> 16).unwrap_or(usize::MAX);
            return self.add_fd(ctx, arg, size);
        }
        match req {
            NOTIF_RECV => self.recv(ctx, arg),
            NOTIF_SEND => self.send(ctx, arg),
            NOTIF_ID_VALID | NOTIF_ID_VALID_WRONG_DIR => {
                let mut id = [0u8; 8];
                ctx.mm().copy_in(arg, &mut id)?;
                self.listener.id_valid(u64::from_le_bytes(id)).map(|()| 0)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn poll_events(&self) -> u32 {
        self.listener.poll_events()
    }

    fn event_register(&self, e: &Entry) {
        self.listener.queue().register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.listener.queue().unregister(e);
    }
}
