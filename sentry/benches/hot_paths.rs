//! Criterion micro-benchmarks of the sentry's hot internal paths, the
//! parts of every trapped system call that husk-bench's whole-program rows
//! cannot separate: dispatch through the system call table, copying to and
//! from guest memory, a path walk on tmpfs, the netstack's loopback TCP
//! path and a gofer round trip. `cargo bench -p husk-sentry --features testing`; see
//! benches/README.md. Everything runs on a platform that runs no guest
//! code: the handlers are called as the task loop calls them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use husk_netstack::{Family, Stack, TcpEndpoint};
use husk_sentry::api::kernel::Handler;
use husk_sentry::testing::{
    self, Backing, Credentials, FsContext, Idle, MapRequest, MemoryFile, MemoryManager, Perms, Task, Thread, VmaName,
    Walker,
};
use std::hint::black_box;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::Arc;

const RW: Perms = Perms { read: true, write: true, exec: false };
/// Guest memory the benchmarks use: 1 MiB of anonymous memory.
const SCRATCH_LEN: u64 = 1 << 20;

/// The init task of a kernel on `Idle` with a tmpfs root, and the address
/// of 1 MiB of guest memory it can use, touched once.
fn task() -> (Task, u64) {
    let memory = Arc::new(MemoryFile::new(64 << 20).expect("memfd"));
    let kernel = testing::kernel(memory.clone());
    husk_sentry::api::syscalls::register(&kernel);
    let mm = Arc::new(MemoryManager::new(memory, Arc::new(Idle), 1 << 40));
    let scratch = mm
        .mmap(MapRequest {
            addr: 0,
            len: SCRATCH_LEN,
            perms: RW,
            fixed: false,
            noreplace: false,
            shared: false,
            backing: Backing::Anon,
            name: VmaName::None,
        })
        .expect("mmap");
    mm.copy_out(scratch, &vec![0u8; 1 << 20]).expect("first touch");
    let fs = Arc::new(FsContext::new(kernel.mounts().clone(), kernel.mounts().root(), kernel.mounts().root()));
    let thread = Arc::new(Thread::new_init(1, Credentials::new(0, 0), mm, fs));
    (Task::new(kernel, thread).expect("task"), scratch)
}

/// Calls the handler of system call `nr` as dispatch does: the table row
/// by number, then its handler (one that returns a value: the calls
/// measured here end no thread and replace no registers).
fn call(task: &mut Task, nr: libc::c_long, args: [u64; 6]) -> u64 {
    let row = husk_sentry::api::syscalls::table().get(usize::try_from(nr).expect("nr")).expect("a row");
    let Some(Handler::Value(handler)) = row.handler else { panic!("{}: not a value handler", row.name) };
    handler(task, args).unwrap_or_else(|e| panic!("{}: {e:?}", row.name))
}

/// Writes `path` as a C string at `addr` of the task's memory.
fn put_path(task: &Task, addr: u64, path: &str) -> u64 {
    let mut bytes = path.as_bytes().to_vec();
    bytes.push(0);
    task.thread.mm().copy_out(addr, &bytes).expect("copy_out");
    addr
}

const AT_FDCWD: u64 = u64::from_ne_bytes((libc::AT_FDCWD as i64).to_ne_bytes());
/// Four directories deep, as a typical `/usr/lib/python3/...` lookup.
const DEEP: &str = "/usr/lib/python3/dist-packages/module.py";

fn dispatch(c: &mut Criterion) {
    let (mut task, _) = task();
    c.bench_function("dispatch/getppid (table lookup + handler)", |b| {
        b.iter(|| black_box(call(&mut task, libc::SYS_getppid, black_box([0; 6]))))
    });
}

fn copies(c: &mut Criterion) {
    let (task, addr) = task();
    let mm = task.thread.mm();
    let mut g = c.benchmark_group("mm");
    for len in [64usize, 4096, 65536] {
        let data = vec![7u8; len];
        let mut buf = vec![0u8; len];
        g.throughput(Throughput::Bytes(u64::try_from(len).expect("len")));
        g.bench_function(format!("copy_out {len} B"), |b| b.iter(|| mm.copy_out(addr + 100, black_box(&data))));
        g.bench_function(format!("copy_in {len} B"), |b| b.iter(|| mm.copy_in(addr + 100, black_box(&mut buf))));
    }
    g.finish();
}

fn path_walk(c: &mut Criterion) {
    let (mut task, addr) = task();
    let mut dir = String::new();
    for part in DEEP.split('/').filter(|p| !p.is_empty()) {
        dir.push('/');
        dir.push_str(part);
        if dir.len() == DEEP.len() {
            let path = put_path(&task, addr, &dir);
            let flags = u64::try_from(libc::O_CREAT | libc::O_WRONLY).expect("flags");
            let fd = call(&mut task, libc::SYS_openat, [AT_FDCWD, path, flags, 0o644, 0, 0]);
            call(&mut task, libc::SYS_close, [fd, 0, 0, 0, 0, 0]);
        } else {
            let path = put_path(&task, addr, &dir);
            call(&mut task, libc::SYS_mkdirat, [AT_FDCWD, path, 0o755, 0, 0, 0]);
        }
    }
    let mut g = c.benchmark_group("vfs");
    let creds = Credentials::new(0, 0);
    let kernel = task.kernel.clone();
    let root = kernel.mounts().root();
    let walker = Walker { ns: kernel.mounts(), root: root.clone(), creds: &creds };
    g.bench_function("walk 5 components on tmpfs", |b| {
        b.iter(|| walker.resolve(&root, black_box(DEEP.as_bytes()), true).expect("resolves"))
    });
    let path = put_path(&task, addr, DEEP);
    let statbuf = addr + 4096;
    g.bench_function("newfstatat handler (copy path in, walk, copy stat out)", |b| {
        b.iter(|| call(&mut task, libc::SYS_newfstatat, [AT_FDCWD, path, statbuf, 0, 0, 0]))
    });
    g.finish();
}

fn netstack(c: &mut Criterion) {
    let stack = Stack::new();
    let addr: SocketAddr = "127.0.0.1:8080".parse().expect("address");
    let listener = TcpEndpoint::new(&stack, Family::V4);
    listener.bind(addr).expect("bind");
    listener.listen(1).expect("listen");
    let client = TcpEndpoint::new(&stack, Family::V4);
    client.connect(addr, false).expect("connect");
    let server = listener.accept().expect("accept");
    let mut g = c.benchmark_group("netstack");
    for len in [64usize, 65536] {
        let data = vec![1u8; len];
        let mut buf = vec![0u8; len];
        g.throughput(Throughput::Bytes(u64::try_from(len).expect("len")));
        g.bench_function(format!("loopback TCP send+recv {len} B"), |b| {
            b.iter(|| {
                let sent = client.send(black_box(&data)).expect("send");
                let mut got = 0;
                while got < sent {
                    got += server.recv(&mut buf, false).expect("recv");
                }
            })
        });
    }
    g.throughput(Throughput::Elements(1));
    g.bench_function("loopback TCP connect+accept+close", |b| {
        b.iter(|| {
            let c = TcpEndpoint::new(&stack, Family::V4);
            c.connect(addr, false).expect("connect");
            drop(listener.accept().expect("accept"));
        })
    });
    g.finish();
}

/// A gofer server thread on a fresh directory, and a client on the other
/// end of its socket.
fn gofer() -> (husk_gofer::Client, std::path::PathBuf) {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    let dir = std::env::temp_dir().join(format!("husk-sentry-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    std::fs::write(dir.join("file"), b"gofer").expect("a file");
    let (client_end, server_end) =
        socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC).expect("socketpair");
    let open = |p: &std::path::Path, flags: i32| -> OwnedFd {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(flags | libc::O_DIRECTORY).open(p).expect("open").into()
    };
    let (root, proc_fds) = (open(&dir, libc::O_PATH), open(std::path::Path::new("/proc/self/fd"), 0));
    std::thread::spawn(move || husk_gofer::server::serve(server_end, root, proc_fds, false));
    (husk_gofer::Client::new(client_end), dir)
}

fn gofer_round_trip(c: &mut Criterion) {
    let (client, dir) = gofer();
    let (root, _) = client.attach().expect("attach");
    let (file, _) = client.walk(root, b"file").expect("walk");
    let mut g = c.benchmark_group("gofer");
    g.bench_function("stat round trip", |b| b.iter(|| client.stat(black_box(file)).expect("stat")));
    g.bench_function("walk+clunk round trips", |b| {
        b.iter(|| {
            let (fid, _) = client.walk(root, black_box(b"file")).expect("walk");
            client.clunk(fid);
        })
    });
    g.finish();
    drop(client);
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group!(benches, dispatch, copies, path_walk, netstack, gofer_round_trip);
criterion_main!(benches);
