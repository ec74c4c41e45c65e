//! Filesystem implementations.
pub mod devfs;
pub mod gofer;
pub mod host_file;
pub mod pipe;
pub mod procfs;
pub mod tmpfs;
pub mod synthetic;
