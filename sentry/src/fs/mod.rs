//! Filesystem implementations. Safe Rust only: the host calls files make
//! go through `crate::host`.

#![deny(unsafe_code)]

pub mod anon;
pub mod cgroupfs;
pub mod devfs;
pub mod devpts;
pub mod disk;
pub mod dns;
pub mod dns_tcp;
pub mod egress;
pub mod egress_rate;
pub mod epoll;
pub mod eventfd;
pub mod gofer;
pub mod host_file;
pub mod inbound;
pub mod inet;
pub mod inotify;
pub mod mqueue;
pub mod netdev;
pub mod netlink;
pub mod nsfs;
pub mod overlay;
pub mod pidfd;
pub mod ping;
pub mod ping_local;
pub mod pipe;
pub mod procfs;
pub mod read_only;
pub mod redacted;
pub mod secrets;
pub mod signalfd;
pub mod sockopt;
pub mod synthetic;
pub mod timerfd;
pub mod tmpfs;
pub mod tty;
pub mod unix;
pub mod unix_msg;
