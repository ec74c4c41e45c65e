//! open(2)'s rules, as Linux's `do_filp_open` and `may_open` apply them:
//! creating the last component (`O_CREAT`, `O_EXCL`), following it or not
//! (`O_NOFOLLOW`), the type checks (`O_DIRECTORY`, `EISDIR`, `ELOOP`), the
//! permission the access mode needs, and `O_PATH` descriptors. Handlers
//! decode arguments, call `open_at` and install the description.

use super::acl;
use super::at::DirFd;
use super::notify;
use super::perm::{self, MAY_EXEC, MAY_READ, MAY_WRITE};
use super::walk::Walker;
use super::{Dentry, FileDescription, FileOps, NewNode, S_IFBLK, S_IFCHR, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use crate::abi::fcntl::O_LARGEFILE;
use crate::abi::Errno;
use std::sync::Arc;

/// Open flags kept in the file description (F_GETFL reports them, and
/// the `O_LARGEFILE` `description` adds).
const KEPT_FLAGS: i32 = libc::O_ACCMODE
    | libc::O_APPEND
    | libc::O_NONBLOCK
    | libc::O_DSYNC
    | libc::O_ASYNC
    | libc::O_DIRECT
    | libc::O_DIRECTORY
    | libc::O_NOFOLLOW
    | libc::O_NOATIME
    | libc::O_PATH
    | libc::O_SYNC;

/// The flags an `O_PATH` open looks at; the others are ignored.
const PATH_FLAGS: i32 = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// What to open and how: open(2)'s `flags` and `mode`, and the umask that
/// applies to a file it creates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpenHow {
    pub flags: i32,
    pub mode: u32,
    pub umask: u32,
}

/// Opens `(dirfd, path)` with the walker's credentials, creating the file
/// if asked. `O_CLOEXEC` is the caller's (it belongs to the descriptor).
#[cfg(test)]
pub(crate) fn open_at(w: &Walker<'_>, dirfd: DirFd, path: &[u8], how: OpenHow) -> Result<Arc<FileDescription>, Errno> {
    open_at_noting(w, dirfd, path, how, &|_, _| Ok(()))
}

/// What is told of a name about to be made or removed, with its folder
/// (as resolved by the call itself), before the change; an error stops
/// the call with it (the audit log's hook: no second resolution).
pub(crate) type BeforeChange<'a> = &'a dyn Fn(&Arc<Dentry>, &[u8]) -> Result<(), Errno>;

/// `open_at`, telling `before_create` of a name `O_CREAT` is about to
/// make.
pub(crate) fn open_at_noting(
    w: &Walker<'_>,
    dirfd: DirFd,
    path: &[u8],
    how: OpenHow,
    before_create: BeforeChange<'_>,
) -> Result<Arc<FileDescription>, Errno> {
    if how.flags & O_TMPFILE_ONLY != 0 {
        return open_tmpfile(w, dirfd, path, how);
    }
    let is_path = how.flags & libc::O_PATH != 0;
    let flags = if is_path { how.flags & PATH_FLAGS } else { how.flags };
    let nofollow = flags & libc::O_NOFOLLOW != 0;
    let dentry = if flags & libc::O_CREAT != 0 && !is_path {
        match lookup_or_create(w, dirfd, path, flags, how, before_create)? {
            Created::Existing(d) => d,
            Created::New(d) => {
                if let Some(parent) = &d.parent {
                    notify::created(parent.node.as_ref(), &d.name, false);
                }
                let ops = d.node.open(flags & !libc::O_TRUNC)?;
                return Ok(opened(d, ops, flags, S_IFREG));
            }
        }
    } else {
        w.resolve_at(dirfd, path, !nofollow, false)?
    };
    let st = dentry.node.stat()?;
    let kind = st.mode & S_IFMT;
    if kind == S_IFLNK && !is_path {
        return Err(Errno::ELOOP);
    }
    if flags & libc::O_DIRECTORY != 0 && kind != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    if is_path {
        return Ok(description(dentry, Arc::new(PathOnly), flags));
    }
    may_open(w, dentry.node.as_ref(), &st, kind, flags)?;
    let writes = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
    if writes && !perm::special_file(kind) {
        perm::mount_writable(&dentry)?;
    }
    // No directory takes direct I/O (Linux's `FMODE_CAN_ODIRECT` test).
    if kind == S_IFDIR && flags & libc::O_DIRECT != 0 {
        return Err(Errno::EINVAL);
    }
    if matches!(kind, S_IFCHR | S_IFBLK) && dentry.mount.nodev() {
        return Err(Errno::EACCES);
    }
    let open_flags = if kind == S_IFREG { flags } else { flags & !libc::O_TRUNC };
    let ops = dentry.node.open(open_flags)?;
    let f = opened(dentry, ops, flags, kind);
    // The truncation reports after the open, as Linux's do_open does.
    if open_flags & libc::O_TRUNC != 0 {
        notify::file_event(&f.dentry, notify::IN_MODIFY);
    }
    Ok(f)
}

/// `__O_TMPFILE`: `O_TMPFILE` without the `O_DIRECTORY` it includes.
const O_TMPFILE_ONLY: i32 = libc::O_TMPFILE & !libc::O_DIRECTORY;

/// `O_TMPFILE`: a new regular file without a name in the directory
/// `path` names, open for writing; linkat(2) may name it later unless
/// `O_EXCL`. The flags are checked as Linux's `build_open_flags`, the
/// directory as `vfs_tmpfile` (write and search permission).
fn open_tmpfile(w: &Walker<'_>, dirfd: DirFd, path: &[u8], how: OpenHow) -> Result<Arc<FileDescription>, Errno> {
    let flags = how.flags;
    if flags & (libc::O_TMPFILE | libc::O_CREAT) != libc::O_TMPFILE || flags & libc::O_PATH != 0 {
        return Err(Errno::EINVAL);
    }
    if !matches!(flags & libc::O_ACCMODE, libc::O_WRONLY | libc::O_RDWR) {
        return Err(Errno::EINVAL);
    }
    let dir = w.resolve_at(dirfd, path, flags & libc::O_NOFOLLOW == 0, false)?;
    let st = dir.node.stat()?;
    if st.mode & S_IFMT != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    perm::mount_writable(&dir)?;
    perm::check_node(w.creds, dir.node.as_ref(), &st, MAY_WRITE | MAY_EXEC)?;
    let mode = perm::strip_sgid(w.creds, &st, how.mode & 0o7777);
    let new = NewNode { mode, uid: w.creds.fsuid, gid: w.creds.fsgid };
    let inherited = acl::inherit(dir.node.as_ref(), new, how.umask, false);
    let node = dir.node.tmpfile(inherited.new, flags & libc::O_EXCL == 0)?;
    inherited.apply(node.as_ref())?;
    let name = format!("#{}", node.stat()?.ino);
    let d = dir.child(name.as_bytes(), node);
    let flags = flags & !(O_TMPFILE_ONLY | libc::O_DIRECTORY | libc::O_EXCL | libc::O_TRUNC);
    let ops = d.node.open(flags)?;
    Ok(opened(d, ops, flags, S_IFREG))
}

/// The description of a file just opened: a regular file's I/O reports
/// its events (`IN_ACCESS`, `IN_MODIFY`), and the open is one
/// (`IN_OPEN`).
fn opened(d: Arc<Dentry>, ops: Arc<dyn FileOps>, flags: i32, kind: u32) -> Arc<FileDescription> {
    let ops = if kind == S_IFREG { notify::WatchedFile::wrap(d.clone(), ops) } else { ops };
    notify::file_event(&d, notify::IN_OPEN);
    description(d, ops, flags)
}

/// The last component of an `O_CREAT` open: found, or made now.
enum Created {
    Existing(Arc<Dentry>),
    New(Arc<Dentry>),
}

/// Looks the last component up (not following a symlink with `O_EXCL`
/// or `O_NOFOLLOW`), failing with `EEXIST` under `O_EXCL`, or creates it
/// (write and search permission on the parent needed).
fn lookup_or_create(
    w: &Walker<'_>,
    dirfd: DirFd,
    path: &[u8],
    flags: i32,
    how: OpenHow,
    before_create: BeforeChange<'_>,
) -> Result<Created, Errno> {
    let pn = w.parent_at(dirfd, path)?;
    if pn.name.is_empty() || pn.trailing_slash {
        return Err(Errno::EISDIR);
    }
    let exclusive = flags & libc::O_EXCL != 0;
    let mut links = 0;
    match w.step(&pn.parent, &pn.name, !exclusive && flags & libc::O_NOFOLLOW == 0, &mut links) {
        Ok(_) if exclusive => Err(Errno::EEXIST),
        Ok(d) => Ok(Created::Existing(d)),
        Err(Errno::ENOENT) => {
            before_create(&pn.parent, &pn.name)?;
            perm::mount_writable(&pn.parent)?;
            let pst = pn.parent.node.stat()?;
            perm::check_node(w.creds, pn.parent.node.as_ref(), &pst, MAY_WRITE | MAY_EXEC)?;
            let mode = perm::strip_sgid(w.creds, &pst, how.mode & 0o7777);
            let new = NewNode { mode, uid: w.creds.fsuid, gid: w.creds.fsgid };
            let inherited = acl::inherit(pn.parent.node.as_ref(), new, how.umask, false);
            match pn.parent.node.create(&pn.name, inherited.new) {
                Ok(node) => {
                    inherited.apply(node.as_ref())?;
                    Ok(Created::New(pn.parent.child(&pn.name, node)))
                }
                // Another open made the name between the lookup and the
                // create: open what it made, as Linux's lookup-or-create
                // (done under the directory's lock) would have.
                Err(Errno::EEXIST) if !exclusive => {
                    w.step(&pn.parent, &pn.name, flags & libc::O_NOFOLLOW == 0, &mut links).map(Created::Existing)
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// `may_open`: a directory is not opened for writing (`O_TRUNC` counts as
/// writing, as in Linux's `build_open_flags`) or with `O_CREAT`, and the access mode needs read and write permission on the node
/// (`O_TRUNC` needs write permission on a regular file).
fn may_open(w: &Walker<'_>, node: &dyn super::Node, st: &super::Stat, kind: u32, flags: i32) -> Result<(), Errno> {
    let access = flags & libc::O_ACCMODE;
    let wants_write = access == libc::O_WRONLY || access == libc::O_RDWR;
    if kind == S_IFDIR && (wants_write || flags & (libc::O_CREAT | libc::O_TRUNC) != 0) {
        return Err(Errno::EISDIR);
    }
    let mut want = 0;
    if access != libc::O_WRONLY {
        want |= MAY_READ;
    }
    if wants_write || (flags & libc::O_TRUNC != 0 && kind == S_IFREG) {
        want |= MAY_WRITE;
    }
    perm::check_node(w.creds, node, st, want)
}

/// The description of an open file: open(2) adds `O_LARGEFILE` to all
/// but `O_PATH` descriptors (whose flags it reduces to `PATH_FLAGS`).
fn description(d: Arc<Dentry>, ops: Arc<dyn FileOps>, flags: i32) -> Arc<FileDescription> {
    let kept = u32::try_from(flags & KEPT_FLAGS).unwrap_or(0);
    let large = if flags & libc::O_PATH != 0 { 0 } else { O_LARGEFILE };
    FileDescription::new(d, ops, kept | large)
}

/// The operations of an `O_PATH` descriptor: none.
struct PathOnly;

impl FileOps for PathOnly {
    fn read(&self, _buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        Err(Errno::EBADF)
    }

    fn write(&self, _buf: &[u8], _off: u64) -> Result<usize, Errno> {
        Err(Errno::EBADF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Credentials;
    use crate::fs::tmpfs::Tmpfs;
    use crate::vfs::MountNamespace;

    const DIR: NewNode = NewNode { mode: 0o755, uid: 0, gid: 0 };

    /// / with a directory d/, a root-only file secret, a file f holding
    /// "data", a symlink l to f and a dangling symlink dangling.
    fn setup() -> MountNamespace {
        let root = Tmpfs::new(0o755, 0, 0);
        root.mkdir(b"d", DIR).unwrap();
        root.create(b"secret", NewNode { mode: 0o600, uid: 0, gid: 0 }).unwrap();
        let f = root.create(b"f", NewNode { mode: 0o666, uid: 0, gid: 0 }).unwrap();
        f.open(libc::O_WRONLY).unwrap().write(b"data", 0).unwrap();
        root.symlink(b"l", b"f", DIR).unwrap();
        root.symlink(b"dangling", b"nowhere", DIR).unwrap();
        MountNamespace::new(root, "tmpfs", "root")
    }

    fn open_as(
        ns: &MountNamespace,
        creds: &Credentials,
        path: &str,
        flags: i32,
    ) -> Result<Arc<FileDescription>, Errno> {
        let w = Walker { ns, root: ns.root(), creds };
        let how = OpenHow { flags, mode: 0o666, umask: 0o022 };
        open_at(&w, DirFd::Cwd(ns.root()), path.as_bytes(), how)
    }

    fn open(ns: &MountNamespace, path: &str, flags: i32) -> Result<Arc<FileDescription>, Errno> {
        open_as(ns, &Credentials::new(0, 0), path, flags)
    }

    #[test]
    fn create_and_exclusive() {
        let ns = setup();
        let user = Credentials::new(1000, 1000);
        assert_eq!(open_as(&ns, &user, "/d/new", libc::O_CREAT | libc::O_WRONLY).err(), Some(Errno::EACCES));
        let f = open(&ns, "/new", libc::O_CREAT | libc::O_WRONLY).unwrap();
        assert_eq!(f.stat().unwrap().mode, S_IFREG | 0o644, "the umask applies");
        assert!(open(&ns, "/new", libc::O_CREAT | libc::O_RDONLY).is_ok(), "an existing file is opened");
        assert_eq!(open(&ns, "/new", libc::O_CREAT | libc::O_EXCL).err(), Some(Errno::EEXIST));
        assert_eq!(open(&ns, "/dangling", libc::O_CREAT | libc::O_EXCL).err(), Some(Errno::EEXIST), "links count");
        assert_eq!(open(&ns, "/d", libc::O_CREAT).err(), Some(Errno::EISDIR));
        assert_eq!(open(&ns, "/x/", libc::O_CREAT).err(), Some(Errno::EISDIR), "a trailing slash");
        assert_eq!(open(&ns, "/", libc::O_CREAT).err(), Some(Errno::EISDIR));
        assert_eq!(open(&ns, "/nope/x", libc::O_CREAT).err(), Some(Errno::ENOENT));
    }

    #[test]
    fn type_rules() {
        let ns = setup();
        assert_eq!(open(&ns, "/f", libc::O_DIRECTORY).err(), Some(Errno::ENOTDIR));
        assert!(open(&ns, "/d", libc::O_DIRECTORY).is_ok());
        assert_eq!(open(&ns, "/d", libc::O_WRONLY).err(), Some(Errno::EISDIR));
        assert_eq!(open(&ns, "/d", libc::O_RDWR).err(), Some(Errno::EISDIR));
        assert_eq!(open(&ns, "/l", libc::O_NOFOLLOW).err(), Some(Errno::ELOOP));
        assert!(open(&ns, "/l", 0).is_ok(), "links are followed");
        assert_eq!(open(&ns, "/f/", 0).err(), Some(Errno::ENOTDIR));
        assert_eq!(open(&ns, "/nope", 0).err(), Some(Errno::ENOENT));
        assert_eq!(open(&ns, "/f", libc::O_TMPFILE).err(), Some(Errno::EINVAL));
        assert_eq!(open(&ns, "/f", libc::O_TMPFILE | libc::O_RDWR).err(), Some(Errno::ENOTDIR));
        let tmp = open(&ns, "/d", libc::O_TMPFILE | libc::O_RDWR).unwrap();
        assert_eq!(tmp.stat().unwrap().nlink, 0, "an O_TMPFILE file has no name");
    }

    #[test]
    fn path_descriptors() {
        let ns = setup();
        let p = open(&ns, "/l", libc::O_PATH | libc::O_NOFOLLOW).unwrap();
        assert!(p.is_path() && p.dentry.is_symlink(), "O_PATH|O_NOFOLLOW names the link");
        assert_eq!(p.read(&mut [0; 4]).err(), Some(Errno::EBADF));
        let user = Credentials::new(1000, 1000);
        let p = open_as(&ns, &user, "/secret", libc::O_PATH | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC).unwrap();
        assert_eq!(p.flags(), libc::O_PATH as u32, "other flags (O_LARGEFILE too) are dropped, no check");
    }

    #[test]
    fn permissions_and_truncation() {
        let ns = setup();
        let user = Credentials::new(1000, 1000);
        assert_eq!(open_as(&ns, &user, "/secret", libc::O_RDONLY).err(), Some(Errno::EACCES));
        let dir = open_as(&ns, &user, "/d", libc::O_RDONLY | libc::O_TRUNC).map(|_| ());
        assert_eq!(dir, Err(Errno::EISDIR), "O_TRUNC asks for writing");
        let f = open_as(&ns, &user, "/f", libc::O_RDWR | libc::O_TRUNC | libc::O_CLOEXEC).unwrap();
        assert_eq!(f.stat().unwrap().size, 0, "O_TRUNC empties a regular file");
        assert_eq!(f.flags(), libc::O_RDWR as u32 | O_LARGEFILE, "O_TRUNC and O_CLOEXEC are not kept");
    }

    #[test]
    fn start_directories() {
        let ns = setup();
        let creds = Credentials::new(0, 0);
        let w = Walker { ns: &ns, root: ns.root(), creds: &creds };
        let how = OpenHow { flags: 0, mode: 0, umask: 0 };
        let badf = || DirFd::Fd(Err(Errno::EBADF));
        assert!(open_at(&w, badf(), b"/f", how).is_ok(), "an absolute path ignores the descriptor");
        assert_eq!(open_at(&w, badf(), b"f", how).err(), Some(Errno::EBADF));
        let file = w.resolve(&ns.root(), b"/f", true).unwrap();
        assert_eq!(open_at(&w, DirFd::Fd(Ok(file.clone())), b"x", how).err(), Some(Errno::ENOTDIR));
        assert_eq!(open_at(&w, DirFd::Fd(Ok(file.clone())), b"", how).err(), Some(Errno::ENOENT));
        let d = w.resolve_at_flags(DirFd::Fd(Ok(file)), b"", crate::abi::fcntl::AT_EMPTY_PATH).unwrap();
        assert_eq!(d.path_from(&ns.root()), b"/f", "AT_EMPTY_PATH names the descriptor");
        let l = w.resolve_at_flags(DirFd::Cwd(ns.root()), b"l", crate::abi::fcntl::AT_SYMLINK_NOFOLLOW).unwrap();
        assert!(l.is_symlink());
    }
}
