//! /proc against a real kernel: a tmpfs root, guest memory in a
//! MemoryFile, and a platform that never runs guest code.

use super::*;
use crate::auth::Credentials;
use crate::fs::devfs::new_devfs;
use crate::fs::tmpfs::Tmpfs;
use crate::kernel::thread::set_current;
use crate::kernel::{FsContext, KernelOptions};
use crate::loader::ArgRanges;
use crate::mm::manager::TASK_SIZE;
use crate::mm::{Backing, MapRequest, MemoryFile, MemoryManager, VmaName};
use crate::platform::{Perms, Platform};
use crate::testing::Idle;
use crate::vfs::{Dentry, FileDescription, NewNode};

struct Sandbox {
    kernel: Arc<Kernel>,
    proc: Arc<dyn Node>,
    init: Arc<Thread>,
    etc: Arc<Dentry>,
}

const ARGS: &[u8] = b"prog\0arg 1\0";
const ENV: &[u8] = b"A=1\0PATH=/bin\0";

/// A kernel with /proc mounted and thread 1 running "prog" with `ARGS` and
/// `ENV` in its memory; thread 1 is the calling thread's guest thread.
fn sandbox() -> Sandbox {
    let memory = Arc::new(MemoryFile::new(1 << 30).unwrap());
    let root = Tmpfs::new(0o755, 0, 0);
    let new = NewNode { mode: 0o755, uid: 0, gid: 0 };
    root.mkdir(b"proc", new).unwrap();
    root.mkdir(b"etc", new).unwrap();
    let platform: Arc<dyn Platform> = Arc::new(Idle);
    let opts = KernelOptions { hostname: b"box".to_vec(), ..KernelOptions::default() };
    let anon = Tmpfs::new(0o600, 0, 0);
    let kernel = Arc::new(Kernel::new(platform.clone(), memory.clone(), root.clone(), anon, opts));
    let proc = new_procfs(Arc::downgrade(&kernel));
    let ns_root = kernel.mounts().root();
    let at = ns_root.child(b"proc", root.lookup(b"proc").unwrap());
    kernel.mounts().mount(&at, proc.clone(), "proc", "proc").unwrap();
    let etc = ns_root.child(b"etc", root.lookup(b"etc").unwrap());

    let space = platform.new_address_space().unwrap();
    let mm = Arc::new(MemoryManager::new(memory, space, TASK_SIZE - (1 << 30)));
    let fs = Arc::new(FsContext::new(kernel.mounts().clone(), ns_root.clone(), etc.clone()));
    let init = Arc::new(Thread::new_init(kernel.alloc_tid(), Credentials::new(0, 0), mm.clone(), fs));
    init.set_comm(b"prog".to_vec());
    let addr = mm
        .mmap(MapRequest {
            addr: 0,
            len: 4096,
            perms: Perms { read: true, write: true, exec: false },
            fixed: false,
            noreplace: false,
            shared: false,
            backing: Backing::Anon,
            name: VmaName::Stack,
        })
        .unwrap();
    mm.copy_out(addr, &[ARGS, ENV].concat()).unwrap();
    let end = addr + ARGS.len() as u64;
    *init.args().lock() = ArgRanges { arg_start: addr, arg_end: end, env_start: end, env_end: end + ENV.len() as u64 };
    kernel.add_thread(init.clone());
    kernel.procs().add(init.group().clone(), 0);
    set_current(Some(init.clone()));
    Sandbox { kernel, proc, init, etc }
}

fn walk(root: &Arc<dyn Node>, path: &str) -> Result<Arc<dyn Node>, Errno> {
    path.split('/').filter(|c| !c.is_empty()).try_fold(root.clone(), |n, c| n.lookup(c.as_bytes()))
}

fn read(root: &Arc<dyn Node>, path: &str) -> Result<Vec<u8>, Errno> {
    let f = walk(root, path)?.open(libc::O_RDONLY)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 100];
    loop {
        let n = f.read(&mut buf, out.len() as u64)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

fn read_text(root: &Arc<dyn Node>, path: &str) -> String {
    String::from_utf8(read(root, path).unwrap()).unwrap()
}

fn names(dir: &Arc<dyn Node>) -> Vec<String> {
    let entries = dir.readdir().unwrap();
    entries.into_iter().map(|e| String::from_utf8(e.name).unwrap()).collect()
}

#[test]
fn self_links_name_the_current_thread() {
    let s = sandbox();
    assert_eq!(s.proc.lookup(b"self").unwrap().readlink().unwrap(), b"1");
    assert_eq!(s.proc.lookup(b"thread-self").unwrap().readlink().unwrap(), b"1/task/1");
    assert!(names(&s.proc).contains(&"1".to_string()));
    assert_eq!(s.proc.lookup(b"2").err(), Some(Errno::ENOENT));
}

#[test]
fn cmdline_and_environ_come_from_guest_memory() {
    let s = sandbox();
    assert_eq!(read(&s.proc, "1/cmdline").unwrap(), ARGS);
    assert_eq!(read(&s.proc, "1/environ").unwrap(), ENV);
    assert_eq!(read_text(&s.proc, "1/comm"), "prog\n");
    let environ = walk(&s.proc, "1/environ").unwrap().stat().unwrap();
    assert_eq!(environ.mode, S_IFREG | 0o400);
}

#[test]
fn status_stat_statm_limits() {
    let s = sandbox();
    let status = read_text(&s.proc, "1/status");
    for line in ["Name:\tprog", "State:\tR (running)", "Pid:\t1", "PPid:\t0", "NSsid:\t1", "Threads:\t1"] {
        assert!(status.lines().any(|l| l == line), "{line} in {status}");
    }
    assert!(status.contains("VmStk:\t       4 kB\n"), "{status}");
    assert!(status.contains("FDSize:\t64\n"));
    let stat = read_text(&s.proc, "1/stat");
    assert!(stat.starts_with("1 (prog) R 0 1 1 0 -1 "), "{stat}");
    assert_eq!(stat.split(' ').count(), 52);
    assert_eq!(read_text(&s.proc, "1/statm"), "1 1 0 0 0 1 0\n");
    assert!(read_text(&s.proc, "1/limits").starts_with("Limit                     Soft Limit"));
    assert_eq!(read_text(&s.proc, "1/cgroup"), "0::/\n");
    assert_eq!(read_text(&s.proc, "1/oom_score_adj"), "0\n");
    assert_eq!(read_text(&s.proc, "1/loginuid"), "4294967295");
    assert!(read_text(&s.proc, "1/maps").ends_with("[stack]\n"));
}

#[test]
fn links_resolve_to_the_sandbox_objects() {
    let s = sandbox();
    let cwd = walk(&s.proc, "1/cwd").unwrap();
    assert_eq!(cwd.readlink().unwrap(), b"/etc");
    assert!(Arc::ptr_eq(&cwd.magic_link().unwrap().unwrap(), &s.etc));
    assert_eq!(walk(&s.proc, "1/root").unwrap().readlink().unwrap(), b"/");
    let exe = walk(&s.proc, "1/exe").unwrap();
    assert_eq!(exe.readlink().err(), Some(Errno::ENOENT));
    *s.init.exe().lock() = Some(s.etc.clone());
    assert_eq!(exe.readlink().unwrap(), b"/etc");
}

#[test]
fn fd_and_fdinfo_list_open_files() {
    let s = sandbox();
    let null = new_devfs(Arc::default()).lookup(b"null").unwrap();
    let pipe = s.kernel.anon_dentry(b"pipe:[7]", null.clone());
    let ops = null.open(libc::O_RDWR).unwrap();
    let fds = s.init.fds();
    // Linux's O_LARGEFILE on x86-64 (glibc's libc::O_LARGEFILE is 0).
    let flags = 0o100000;
    fds.install(FileDescription::new(pipe.clone(), ops.clone(), flags), false, 0, 1024).unwrap();
    let rw = u32::try_from(libc::O_RDWR).unwrap();
    fds.install(FileDescription::new(s.etc.clone(), ops, rw), true, 0, 1024).unwrap();

    let fd_dir = walk(&s.proc, "1/fd").unwrap();
    assert_eq!(names(&fd_dir), ["0", "1"]);
    let zero = fd_dir.lookup(b"0").unwrap();
    assert_eq!(zero.readlink().unwrap(), b"pipe:[7]");
    assert!(Arc::ptr_eq(&zero.magic_link().unwrap().unwrap(), &pipe));
    assert_eq!(zero.stat().unwrap().mode, S_IFLNK | 0o500);
    let one = fd_dir.lookup(b"1").unwrap();
    assert_eq!(one.readlink().unwrap(), b"/etc");
    assert_eq!(one.stat().unwrap().mode, S_IFLNK | 0o700);
    assert_eq!(fd_dir.lookup(b"2").err(), Some(Errno::ENOENT));
    assert_eq!(fd_dir.lookup(b"01").err(), Some(Errno::ENOENT));
    assert_eq!(fd_dir.stat().unwrap().mode, S_IFDIR | 0o500);

    let ino = s.etc.node.stat().unwrap().ino;
    assert_eq!(read_text(&s.proc, "1/fdinfo/1"), format!("pos:\t0\nflags:\t02000002\nmnt_id:\t1\nino:\t{ino}\n"));
    assert!(read_text(&s.proc, "1/fdinfo/0").starts_with("pos:\t0\nflags:\t0100000\nmnt_id:\t0\n"));
    fds.remove(0).unwrap();
    assert_eq!(zero.readlink().err(), Some(Errno::ENOENT));
    assert_eq!(names(&walk(&s.proc, "1/fdinfo").unwrap()), ["1"]);
}

#[test]
fn mounts_and_mountinfo() {
    let s = sandbox();
    let mounts = read_text(&s.proc, "1/mounts");
    assert_eq!(mounts, "root / overlay rw,relatime 0 0\nproc /proc proc rw,relatime 0 0\n");
    let dev = s.proc.stat().unwrap().dev;
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let info = read_text(&s.proc, "1/mountinfo");
    assert!(info.starts_with("1 0 0:"), "{info}");
    assert!(info.ends_with(&format!("2 1 {major}:{minor} / /proc rw,relatime - proc proc rw\n")), "{info}");
}

#[test]
fn task_directory_holds_the_threads() {
    let s = sandbox();
    let task = walk(&s.proc, "1/task").unwrap();
    assert_eq!(names(&task), ["1"]);
    let thread_dir = task.lookup(b"1").unwrap();
    assert!(!names(&thread_dir).contains(&"task".to_string()));
    assert!(names(&walk(&s.proc, "1").unwrap()).contains(&"task".to_string()));
    assert!(read_text(&s.proc, "1/task/1/status").contains("Pid:\t1\n"));
    assert_eq!(walk(&s.proc, "1").unwrap().stat().unwrap().nlink, 7, "task, fd, fdinfo, ns, net");
    assert_eq!(thread_dir.stat().unwrap().nlink, 6);
}

#[test]
fn ns_links_name_the_namespaces() {
    let s = sandbox();
    let ns = walk(&s.proc, "1/ns").unwrap();
    assert_eq!(names(&ns).len(), 10);
    assert_eq!(ns.lookup(b"uts").unwrap().readlink().unwrap(), b"uts:[4026531838]");
    assert_eq!(ns.lookup(b"pid_for_children").unwrap().readlink().unwrap(), b"pid:[4026531836]");
    let mnt = ns.lookup(b"mnt").unwrap();
    let text = String::from_utf8(mnt.readlink().unwrap()).unwrap();
    let target = mnt.magic_link().unwrap().unwrap();
    assert_eq!(text, format!("mnt:[{}]", target.node.stat().unwrap().ino));
    assert_eq!(ns.lookup(b"other").err(), Some(Errno::ENOENT));
}

#[test]
fn an_exited_process_disappears() {
    let s = sandbox();
    let dir = walk(&s.proc, "1").unwrap();
    let status = dir.lookup(b"status").unwrap();
    s.kernel.remove_thread(&s.init);
    assert_eq!(s.proc.lookup(b"1").err(), Some(Errno::ENOENT));
    assert_eq!(dir.lookup(b"comm").err(), Some(Errno::ENOENT));
    assert_eq!(dir.readdir().err(), Some(Errno::ENOENT));
    assert_eq!(status.open(libc::O_RDONLY).err(), Some(Errno::ESRCH));
    assert!(!names(&s.proc).contains(&"1".to_string()));
}

#[test]
fn system_files_reflect_the_sandbox() {
    let s = sandbox();
    // No task runs here: nothing is runnable.
    assert_eq!(read_text(&s.proc, "loadavg"), "0.00 0.00 0.00 0/1 1\n");
    assert_eq!(read_text(&s.proc, "sys/kernel/hostname"), "box\n");
    assert_eq!(read_text(&s.proc, "sys/kernel/domainname"), "(none)\n");
    let stat = read_text(&s.proc, "stat");
    let btime = s.kernel.boot_time().duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert!(stat.contains(&format!("\nbtime {btime}\n")), "{stat}");
    assert!(stat.contains("\nprocesses 1\n"));
    assert!(stat.starts_with("cpu "));
    let meminfo = read_text(&s.proc, "meminfo");
    let total = system::meminfo_kb(&meminfo, "MemTotal").unwrap();
    let free = system::meminfo_kb(&meminfo, "MemFree").unwrap();
    assert_eq!(total - free, s.kernel.memory().used() / 1024);
    let uptime = read_text(&s.proc, "uptime");
    assert!(uptime.ends_with('\n') && uptime.split(' ').count() == 2, "{uptime}");
    assert_eq!(s.proc.lookup(b"mounts").unwrap().readlink().unwrap(), b"self/mounts");
}

#[test]
fn sysctls_set_at_boot_show_in_proc_sys() {
    use crate::kernel::sysctl::{set, SysctlError};
    let s = sandbox();
    assert_eq!(read_text(&s.proc, "sys/net/ipv4/ip_unprivileged_port_start"), "1024\n");
    assert_eq!(read_text(&s.proc, "sys/net/ipv4/ping_group_range"), "1\t0\n");
    set(&s.kernel, "net.ipv4.ip_unprivileged_port_start", "0").unwrap();
    set(&s.kernel, "net/ipv4/ping_group_range", "0 2147483647").unwrap();
    set(&s.kernel, "kernel.domainname", "example").unwrap();
    assert_eq!(read_text(&s.proc, "sys/net/ipv4/ip_unprivileged_port_start"), "0\n");
    assert_eq!(s.kernel.net_sysctls().unprivileged_port_start(), 0);
    assert_eq!(read_text(&s.proc, "sys/net/ipv4/ping_group_range"), "0\t2147483647\n");
    assert_eq!(read_text(&s.proc, "sys/kernel/domainname"), "example\n");
    assert_eq!(
        set(&s.kernel, "net.ipv4.ip_unprivileged_port_start", "70000"),
        Err(SysctlError::Invalid("net.ipv4.ip_unprivileged_port_start".into(), "70000".into()))
    );
    assert!(matches!(set(&s.kernel, "net.ipv4.ping_group_range", "5 1"), Err(SysctlError::Invalid(..))));
    assert!(matches!(set(&s.kernel, "kernel.hostname", &"h".repeat(65)), Err(SysctlError::Invalid(..))));
    assert_eq!(set(&s.kernel, "vm.swappiness", "1"), Err(SysctlError::Unknown("vm.swappiness".into())));
}
