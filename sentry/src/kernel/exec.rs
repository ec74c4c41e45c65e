//! execve: replacing a process's image.

use super::task::Task;
use crate::abi::Errno;
use crate::loader::{self, AuxIds, MMAP_TOP};
use crate::mm::MemoryManager;
use crate::vfs::at::DirFd;
use crate::vfs::perm::{self, MAY_EXEC, MAY_READ};
use crate::vfs::walk::Walker;
use crate::vfs::{Dentry, FileDescription, S_IFMT, S_IFREG};
use std::sync::Arc;

/// The personality flag that makes readable memory executable.
const READ_IMPLIES_EXEC: u32 = 0x0040_0000;

/// The most bytes of argv plus envp strings (Linux: a quarter of the 8 MiB
/// stack limit).
pub(crate) const ARG_MAX: usize = 2 << 20;
/// The longest single argument or environment string.
pub(crate) const MAX_ARG_STRLEN: usize = 131_072;

/// Resolves the path of a program (or interpreter) to execute, relative to
/// the working directory, following symlinks.
pub(crate) fn resolve_program(task: &Task, path: &[u8]) -> Result<Arc<Dentry>, Errno> {
    let creds = task.thread.creds();
    let fs = task.thread.fs();
    let ns = fs.mounts();
    let w = Walker { ns: &ns, root: fs.root(), creds: &creds };
    w.resolve_at(DirFd::Cwd(fs.cwd()), path, true, false)
}

/// Opens an already-resolved dentry for execution.
pub(crate) fn open_exec_dentry(task: &Task, d: Arc<Dentry>) -> Result<Arc<FileDescription>, Errno> {
    let st = d.node.stat()?;
    if st.mode & S_IFMT != S_IFREG || d.mount.noexec() {
        return Err(Errno::EACCES);
    }
    let creds = task.thread.creds();
    perm::check_node(&creds, d.node.as_ref(), &st, MAY_EXEC)?;
    perm::check_node(&creds, d.node.as_ref(), &st, MAY_READ)?;
    let ops = d.node.open(libc::O_RDONLY)?;
    Ok(FileDescription::new(d, ops, crate::abi::fcntl::O_RDONLY))
}

/// Loads `file` (named `path`, as the program will see in AT_EXECFN) and,
/// on success, replaces the task's image. On failure the old image is
/// untouched.
pub(crate) fn execve(
    task: &mut Task,
    file: Arc<FileDescription>,
    path: &[u8],
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
) -> Result<(), Errno> {
    let kernel = task.kernel.clone();
    let space = kernel.platform.new_address_space().map_err(|e| {
        log::warn!("execve: cannot create an address space: {e}");
        Errno::ENOMEM
    })?;
    let mm = Arc::new(MemoryManager::new(kernel.memory.clone(), space, MMAP_TOP));
    let creds = task.thread.creds();
    let ids = AuxIds { uid: creds.uid, euid: creds.euid, gid: creds.gid, egid: creds.egid };
    let first = std::cell::Cell::new(Some(file));
    let open = |p: &[u8]| -> Result<Arc<FileDescription>, Errno> {
        if let Some(f) = first.take() {
            return Ok(f);
        }
        let d = resolve_program(task, p)?;
        open_exec_dentry(task, d)
    };
    let loaded = loader::load(&mm, &open, path, argv, &envp, &ids)?;
    // Recorded before the new image can run; a record the log cannot
    // take (failing closed) leaves the old image in place.
    kernel.audit(|| super::audit::exec_record(task, &loaded.exe.dentry, &loaded.argv, &envp))?;
    kernel.package_exec(task, &loaded.argv);

    // The point of no return.
    end_other_threads(task);
    // Locks on the old image's robust list are released as at exit
    // (Linux's exec_mm_release); the new image registers its own list.
    let robust_head = std::mem::take(&mut *task.thread.robust_list.lock()).0;
    super::robust::exit_robust_list(&task.thread.mm(), &kernel.futexes, task.thread.tid, robust_head);
    let old = std::mem::replace(&mut *task.thread.mm.lock(), mm);
    // A process that shared its parent's memory (vfork, CLONE_VM) leaves
    // its thread of that address space, which goes on.
    if Arc::strong_count(&old) > 1 {
        old.space().release_thread();
    }
    drop(old);
    // Descriptors and handlers another process shares are copied first
    // (Linux's unshare_files and unshare_sighand).
    {
        let mut fds = task.thread.fds.lock();
        if Arc::strong_count(&fds) > 1 {
            *fds = Arc::new(fds.fork());
        }
    }
    task.thread.unshare_sigactions();
    for f in task.thread.fds().close_on_exec() {
        task.kernel.descriptor_closed(task.thread.tgid, &f);
    }
    task.thread.sigactions().reset_for_exec();
    task.thread.group().timers().exec();
    *task.thread.altstack.lock() = super::signal::AltStack::default();
    let no_new_privs = {
        let mut attrs = task.thread.attrs.lock();
        attrs.keepcaps = false;
        // An x86-64 ELF program starts without READ_IMPLIES_EXEC (Linux's
        // SET_PERSONALITY); the other flags stay, as setarch relies on.
        attrs.personality &= !READ_IMPLIES_EXEC;
        attrs.no_new_privs
    };
    {
        // No program carries file capabilities or acts set-user-ID here.
        let mut c = task.thread.creds.write();
        c.caps = c.caps.after_exec(c.uid, c.euid, false, no_new_privs);
        (c.suid, c.fsuid, c.sgid, c.fsgid) = (c.euid, c.euid, c.egid, c.egid);
    }
    *task.thread.exe.lock() = Some(loaded.exe.dentry.clone());
    *task.thread.args.lock() = loaded.args;
    *task.thread.auxv.lock() = loaded.auxv;
    let name = loaded.exe.dentry.name.clone();
    let base = path.rsplit(|&b| b == b'/').next().unwrap_or(&name);
    *task.thread.comm.lock() = base.iter().copied().take(15).collect();
    task.reset_registers(loaded.entry, loaded.sp);
    kernel.procs.release_vfork(task.thread.tgid);
    task.thread.release_vfork_waiter(&kernel);
    Ok(())
}

/// execve in a multi-threaded process: every other thread of the group
/// exits first (Linux's de_thread); this one goes on with the new image.
fn end_other_threads(task: &Task) {
    let k = &task.kernel;
    let others: Vec<_> = task.thread.group().threads().into_iter().filter(|t| t.tid != task.thread.tid).collect();
    if others.is_empty() {
        return;
    }
    for t in &others {
        t.exiting.store(true, std::sync::atomic::Ordering::SeqCst);
        k.interrupt(t);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    task.thread.group().wait_until_alone(task.thread.tid, deadline);
}
