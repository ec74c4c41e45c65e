//! Filesystem implementations. Safe Rust only: the host calls files make
//! go through `crate::host`.

#![deny(unsafe_code)]

pub(crate) mod anon;
pub(crate) mod cgroupfs;
pub(crate) mod devfs;
pub(crate) mod devpts;
pub(crate) mod disk;
pub(crate) mod dns;
pub(crate) mod dns_tcp;
pub mod egress;
pub(crate) mod egress_rate;
pub(crate) mod epoll;
pub(crate) mod eventfd;
pub(crate) mod gofer;
pub(crate) mod host_file;
pub mod inbound;
pub(crate) mod inet;
pub(crate) mod inotify;
pub(crate) mod mqueue;
pub(crate) mod netdev;
pub(crate) mod netlink;
pub(crate) mod nsfs;
pub(crate) mod overlay;
pub(crate) mod pidfd;
pub(crate) mod ping;
pub(crate) mod ping_local;
pub(crate) mod pipe;
pub(crate) mod procfs;
pub(crate) mod read_only;
pub(crate) mod redacted;
pub(crate) mod seals;
pub(crate) mod seccomp_notify;
pub(crate) mod secrets;
pub(crate) mod signalfd;
pub(crate) mod sockopt;
pub(crate) mod sockstamp;
pub(crate) mod synthetic;
pub(crate) mod timerfd;
pub(crate) mod tmpfs;
pub(crate) mod tty;
pub(crate) mod unix;
pub(crate) mod unix_msg;
pub(crate) mod unix_oob;
