//! The confined server: `serve_main` and `enter_root` in a thread of their
//! own (a mount namespace and `pivot_root` can be per-thread), so the test
//! process is unaffected. These need `CAP_SYS_ADMIN` and say so when they
//! skip.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use nix::errno::Errno;
use nix::mount::{mount, MsFlags};
use nix::sched::CloneFlags;

use super::{errno, seqpacket_pair, TempDir};
use crate::{confine, server, Client, Result};

/// Moves the calling thread into a private mount namespace of its own;
/// false if that is not permitted here.
fn private_namespace() -> bool {
    match nix::sched::unshare(CloneFlags::CLONE_NEWNS) {
        Ok(()) => {
            mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>).unwrap();
            true
        }
        Err(Errno::EPERM) => {
            eprintln!("skipping: creating a mount namespace needs CAP_SYS_ADMIN");
            false
        }
        Err(e) => panic!("unshare: {e}"),
    }
}

/// Runs `serve` in a new thread once `private_namespace` succeeded there;
/// returns the client and the thread, or `None` if the test must skip.
fn spawn_confined(
    serve: impl FnOnce(OwnedFd) -> Result<()> + Send + 'static,
) -> Option<(Client, JoinHandle<Result<()>>)> {
    let (client_end, server_end) = seqpacket_pair();
    let (ready_tx, ready_rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let ready = private_namespace();
        ready_tx.send(ready).unwrap();
        if ready {
            serve(server_end)
        } else {
            Ok(())
        }
    });
    if ready_rx.recv().unwrap() {
        Some((Client::new(client_end), handle))
    } else {
        handle.join().unwrap().unwrap();
        None
    }
}

#[test]
fn serve_main_sees_only_the_root_without_submounts() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("inside"), b"in").unwrap();
    std::fs::create_dir(dir.path().join("proc")).unwrap();
    let root: PathBuf = dir.path().to_owned();
    let Some((client, server)) = spawn_confined(move |sock| {
        let proc_dir = root.join("proc");
        mount(Some("tmpfs"), &proc_dir, Some("tmpfs"), MsFlags::empty(), None::<&str>).unwrap();
        std::fs::write(proc_dir.join("secret"), b"host").unwrap();
        server::serve_main(&root, sock, false)
    }) else {
        return;
    };

    let (root_fid, _) = client.attach().unwrap();
    let mut names: Vec<Vec<u8>> = client.getdents(root_fid).unwrap().into_iter().map(|e| e.name).collect();
    names.sort();
    assert_eq!(names, [b"inside".to_vec(), b"proc".to_vec()]);
    let (proc_fid, _) = client.walk(root_fid, b"proc").unwrap();
    assert!(client.getdents(proc_fid).unwrap().is_empty(), "a mount below the root is not visible");
    assert_eq!(errno(client.walk(proc_fid, b"secret")), libc::ENOENT);
    let (_, _, _) = client.create(root_fid, b"made", libc::O_WRONLY, 0o644, 0, 0).unwrap();
    let (inside, _) = client.walk(root_fid, b"inside").unwrap();
    let fd = client.open(inside, libc::O_RDONLY).unwrap();
    assert_eq!(std::fs::read(proc_path(&fd)).unwrap(), b"in");

    drop(client);
    server.join().unwrap().unwrap();
    assert!(dir.path().join("made").exists());
    assert!(!dir.path().join("proc/secret").exists());
}

/// A path that reads the file behind `fd`.
fn proc_path(fd: &OwnedFd) -> PathBuf {
    Path::new("/proc/self/fd").join(std::os::fd::AsRawFd::as_raw_fd(fd).to_string())
}

#[test]
fn a_read_only_root_is_read_only_in_the_kernel_too() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("file"), b"data").unwrap();
    let root: PathBuf = dir.path().to_owned();
    let Some((client, server)) = spawn_confined(move |sock| {
        let (root_fd, proc_fds) = confine::enter_root(&root, true)?;
        server::serve(sock, root_fd, proc_fds, false)
    }) else {
        return;
    };
    let (root_fid, _) = client.attach().unwrap();
    assert_eq!(errno(client.mkdir(root_fid, b"d", 0o755, 0, 0)), libc::EROFS);
    assert_eq!(errno(client.create(root_fid, b"n", libc::O_RDWR, 0o644, 0, 0)), libc::EROFS);
    let (file, _) = client.walk(root_fid, b"file").unwrap();
    assert_eq!(errno(client.open(file, libc::O_WRONLY)), libc::EROFS);
    assert!(client.open(file, libc::O_RDONLY).is_ok());
    let statfs = client.statfs(root_fid).unwrap();
    assert_ne!(statfs.flags & libc::ST_RDONLY, 0);
    drop(client);
    server.join().unwrap().unwrap();
    assert!(!dir.path().join("d").exists());
}

#[test]
fn a_single_file_root_serves_that_file_and_nothing_beside_it() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("hosts"), b"127.0.0.1 localhost\n").unwrap();
    std::fs::write(dir.path().join("secret"), b"not served").unwrap();
    let root: PathBuf = dir.path().join("hosts");
    let Some((client, server)) = spawn_confined(move |sock| {
        let (root_fd, proc_fds) = confine::enter_root(&root, false)?;
        server::serve(sock, root_fd, proc_fds, false)
    }) else {
        return;
    };
    let (root_fid, _) = client.attach().unwrap();
    let names: Vec<Vec<u8>> = client
        .getdents(root_fid)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .filter(|n| n.as_slice() != b"." && n.as_slice() != b"..")
        .collect();
    assert_eq!(names, [crate::protocol::SINGLE_FILE.to_vec()]);
    assert!(client.walk(root_fid, b"secret").is_err());
    assert_eq!(errno(client.create(root_fid, b"n", libc::O_RDWR, 0o644, 0, 0)), libc::EROFS);
    let (file, _) = client.walk(root_fid, crate::protocol::SINGLE_FILE).unwrap();
    let fd = client.open(file, libc::O_RDWR).unwrap();
    assert_eq!(std::fs::read(proc_path(&fd)).unwrap(), b"127.0.0.1 localhost\n");
    std::fs::write(proc_path(&fd), b"::1 localhost\n").unwrap();
    drop(fd);
    drop(client);
    server.join().unwrap().unwrap();
    assert_eq!(std::fs::read(dir.path().join("hosts")).unwrap(), b"::1 localhost\n");
}
