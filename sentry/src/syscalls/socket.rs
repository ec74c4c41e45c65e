//! System calls: sockets. No socket family exists in the sandbox yet (Unix
//! sockets and the netstack come next): creating one fails the way Linux
//! fails for a family it does not have, and socket calls on descriptors,
//! none of which is a socket, fail with ENOTSOCK.

use super::args;
use super::{Entries, Support::*};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;

const NONE_YET: &str = "no socket family is available yet: socket/socketpair fail with EAFNOSUPPORT";
const NOT_A_SOCKET: &str = "no descriptor is a socket yet: fails with ENOTSOCK (EBADF for a bad fd)";

pub(super) const ENTRIES: Entries = &[
    ("socket", sys_socket, Unimplemented(NONE_YET)),
    ("socketpair", sys_socket, Unimplemented(NONE_YET)),
    ("bind", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("listen", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("accept", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("accept4", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("connect", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("getsockname", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("getpeername", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("sendto", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("recvfrom", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("sendmsg", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("recvmsg", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("sendmmsg", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("recvmmsg", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("shutdown", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("getsockopt", on_fd, Unimplemented(NOT_A_SOCKET)),
    ("setsockopt", on_fd, Unimplemented(NOT_A_SOCKET)),
];

fn sys_socket(_task: &mut Task, _a: [u64; 6]) -> SysResult {
    Err(Errno::EAFNOSUPPORT)
}

fn on_fd(task: &mut Task, a: [u64; 6]) -> SysResult {
    args::file(task, a[0])?;
    Err(Errno::ENOTSOCK)
}
