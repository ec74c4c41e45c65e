//! System V IPC: the sandbox's one ipc namespace (Linux's `ipc_namespace`,
//! gVisor's `kernel/ipc`) with its three registries — shared memory
//! segments, semaphore sets and message queues — and what they have in
//! common: `ipc_perm`, keys, ids and the permission checks of
//! `ipc/util.c`.
//!
//! Each registry is a [`Table`] of objects by index. An id is the index
//! plus the object's sequence number times 32768 (IPCMNI), so an id that
//! outlived its object never names the next one in its slot.

pub mod msg;
pub mod sem;
pub mod shm;

use crate::abi::ipc::Ipc64Perm;
use crate::abi::layout::Layout;
use crate::abi::Errno;
use crate::auth::caps::{CAP_IPC_OWNER, CAP_SYS_ADMIN};
use crate::auth::Credentials;
use crate::waiter::{Entry, Queue, Registered, Waiter, ALL};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

pub use crate::abi::ipc::{IPC_CREAT, IPC_EXCL, IPC_INFO, IPC_NOWAIT, IPC_PRIVATE, IPC_RMID, IPC_SET, IPC_STAT};

/// The permission bits of `mode` (S_IRWXUGO).
pub const MODE_BITS: u16 = 0o777;
/// Read and write access, as `ipcperms` asks for them.
pub const MAY_READ: u16 = 0o444;
pub const MAY_WRITE: u16 = 0o222;

/// IPCMNI: indexes per registry, and the id's sequence multiplier.
const IPCMNI: u32 = 32768;

/// An object's `ipc_perm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perm {
    pub key: i32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    /// The permission bits and, for segments, SHM_DEST and SHM_LOCKED.
    pub mode: u16,
    pub seq: u16,
}

impl Perm {
    fn new(key: i32, mode: u16, creds: &Credentials, seq: u16) -> Perm {
        Perm { key, uid: creds.euid, gid: creds.egid, cuid: creds.euid, cgid: creds.egid, mode: mode & MODE_BITS, seq }
    }

    /// `ipcperms`: whether `creds` may have the access `flag` asks for
    /// (its permission bits, any of the three classes), else EACCES.
    /// CAP_IPC_OWNER overrides.
    pub fn check(&self, creds: &Credentials, flag: u16) -> Result<(), Errno> {
        let requested = (flag >> 6) | (flag >> 3) | flag;
        let mut granted = self.mode;
        if creds.euid == self.cuid || creds.euid == self.uid {
            granted >>= 6;
        } else if creds.in_group(self.cgid) || creds.in_group(self.gid) {
            granted >>= 3;
        }
        if requested & !granted & 0o7 != 0 && !creds.capable(CAP_IPC_OWNER) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Whether `creds` owns the object for IPC_SET and IPC_RMID: its owner,
    /// its creator or CAP_SYS_ADMIN, else EPERM.
    pub fn check_owner(&self, creds: &Credentials) -> Result<(), Errno> {
        if creds.euid == self.uid || creds.euid == self.cuid || creds.capable(CAP_SYS_ADMIN) {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }

    /// IPC_SET: the new owner and permission bits. An id that maps to no
    /// user (-1) is EINVAL.
    pub fn set(&mut self, new: PermSet) -> Result<(), Errno> {
        if new.uid == u32::MAX || new.gid == u32::MAX {
            return Err(Errno::EINVAL);
        }
        self.uid = new.uid;
        self.gid = new.gid;
        self.mode = (self.mode & !MODE_BITS) | (new.mode & MODE_BITS);
        Ok(())
    }

    /// The guest's `struct ipc64_perm`.
    pub fn to_abi(self) -> Ipc64Perm {
        let Perm { key, uid, gid, cuid, cgid, mode, seq } = self;
        Ipc64Perm { key, uid, gid, cuid, cgid, mode, seq }
    }

    /// Appends the `struct ipc64_perm` that begins a `*id64_ds`.
    pub fn encode(&self, e: &mut crate::abi::layout::Encoder) {
        self.to_abi().encode_to(e);
    }
}

/// What IPC_SET reads from the `struct ipc64_perm` that begins every
/// `*id_ds`: the new owner and mode.
#[derive(Clone, Copy, Debug)]
pub struct PermSet {
    pub uid: u32,
    pub gid: u32,
    pub mode: u16,
}

impl PermSet {
    /// From the bytes of a `*id_ds` (at least the `ipc64_perm`).
    pub fn decode(ds: &[u8]) -> PermSet {
        let p = Ipc64Perm::decode(ds);
        PermSet { uid: p.uid, gid: p.gid, mode: p.mode }
    }
}

/// One registered object and its permissions.
pub struct Slot<T> {
    pub perm: Perm,
    pub obj: Arc<T>,
}

impl<T> Slot<T> {
    fn id(&self, index: u32) -> i32 {
        make_id(index, self.perm.seq)
    }
}

fn make_id(index: u32, seq: u16) -> i32 {
    i32::try_from(u32::from(seq) * IPCMNI + index).unwrap_or(i32::MAX)
}

/// The index and sequence number an id names; EINVAL for a negative id.
fn split_id(id: i32) -> Result<(u32, u16), Errno> {
    let id = u32::try_from(id).map_err(|_| Errno::EINVAL)?;
    Ok((id % IPCMNI, u16::try_from(id / IPCMNI).map_err(|_| Errno::EINVAL)?))
}

struct Inner<T> {
    slots: BTreeMap<u32, Slot<T>>,
    next_seq: u16,
}

/// What `get` does with a key, decoded from the `*get` flags.
#[derive(Clone, Copy, Debug)]
pub struct GetRequest {
    pub key: i32,
    pub flags: i32,
}

/// One family's objects by index.
pub struct Table<T> {
    inner: Mutex<Inner<T>>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table { inner: Mutex::new(Inner { slots: BTreeMap::new(), next_seq: 0 }) }
    }
}

impl<T> Table<T> {
    /// `ipcget`: the id of the object with the request's key, checked by
    /// `existing` (a family's size check) and then against the flags'
    /// permission bits; or a new object from `make` (given the new id and
    /// the other objects) when the key is IPC_PRIVATE or IPC_CREAT finds
    /// none. ENOENT without IPC_CREAT, EEXIST with IPC_CREAT|IPC_EXCL,
    /// ENOSPC past `mni` objects.
    pub fn get(
        &self,
        req: GetRequest,
        creds: &Credentials,
        mni: u32,
        existing: impl FnOnce(&Slot<T>) -> Result<(), Errno>,
        make: impl FnOnce(i32, &mut dyn Iterator<Item = &Slot<T>>) -> Result<T, Errno>,
    ) -> Result<i32, Errno> {
        let mut inner = self.inner.lock();
        if req.key != IPC_PRIVATE {
            if let Some((&index, slot)) = inner.slots.iter().find(|(_, s)| s.perm.key == req.key) {
                if req.flags & IPC_CREAT != 0 && req.flags & IPC_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                existing(slot)?;
                slot.perm.check(creds, u16::try_from(req.flags & 0o777).unwrap_or(0))?;
                return Ok(slot.id(index));
            }
            if req.flags & IPC_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
        }
        let limit = mni.min(IPCMNI);
        let count = u32::try_from(inner.slots.len()).unwrap_or(u32::MAX);
        if count >= limit {
            return Err(Errno::ENOSPC);
        }
        // The lowest free index, as Linux's idr_alloc gives.
        let index = (0..limit).find(|i| !inner.slots.contains_key(i)).ok_or(Errno::ENOSPC)?;
        let seq = inner.next_seq;
        let id = make_id(index, seq);
        let obj = make(id, &mut inner.slots.values())?;
        // Past IPCID_SEQ_MAX (65535 with IPCMNI 32768) the sequence wraps.
        inner.next_seq = seq.wrapping_add(1);
        let mode = u16::try_from(req.flags & 0o777).unwrap_or(0);
        inner.slots.insert(index, Slot { perm: Perm::new(req.key, mode, creds, seq), obj: Arc::new(obj) });
        Ok(id)
    }

    /// Runs `f` on the object `id` names, with the registry locked;
    /// EINVAL when there is none.
    pub fn with<R>(&self, id: i32, f: impl FnOnce(&mut Slot<T>) -> Result<R, Errno>) -> Result<R, Errno> {
        let (index, seq) = split_id(id)?;
        let mut inner = self.inner.lock();
        let slot = inner.slots.get_mut(&index).filter(|s| s.perm.seq == seq).ok_or(Errno::EINVAL)?;
        f(slot)
    }

    /// The object `id` names, once `creds` passed the access check `flag`.
    pub fn lookup(&self, id: i32, creds: &Credentials, flag: u16) -> Result<(Perm, Arc<T>), Errno> {
        self.with(id, |s| {
            s.perm.check(creds, flag)?;
            Ok((s.perm, s.obj.clone()))
        })
    }

    /// Removes the object `id` names, if it still is `obj`.
    pub fn remove(&self, id: i32, obj: &Arc<T>) {
        let Ok((index, seq)) = split_id(id) else { return };
        let mut inner = self.inner.lock();
        if inner.slots.get(&index).is_some_and(|s| s.perm.seq == seq && Arc::ptr_eq(&s.obj, obj)) {
            inner.slots.remove(&index);
        }
    }

    /// The `*_STAT` commands: the id and object at slot `index`; EINVAL
    /// when the slot is empty.
    pub fn at_index(&self, index: i32) -> Result<(i32, Perm, Arc<T>), Errno> {
        let index = u32::try_from(index).map_err(|_| Errno::EINVAL)?;
        let inner = self.inner.lock();
        let slot = inner.slots.get(&index).ok_or(Errno::EINVAL)?;
        Ok((slot.id(index), slot.perm, slot.obj.clone()))
    }

    /// The highest index in use (`ipc_get_maxidx`), 0 when none is.
    pub fn max_index(&self) -> i32 {
        self.inner.lock().slots.keys().next_back().map_or(0, |&i| i32::try_from(i).unwrap_or(0))
    }

    /// Every object: its id, permissions and the object itself.
    pub fn all(&self) -> Vec<(i32, Perm, Arc<T>)> {
        self.inner.lock().slots.iter().map(|(&i, s)| (s.id(i), s.perm, s.obj.clone())).collect()
    }
}

/// The seconds since the epoch, as the `*_time` fields hold them.
pub fn now() -> i64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// Runs `attempt` until it gives a result (Some) or fails, waiting on
/// `queue` between attempts (None: it would block). ERESTARTSYS when the
/// calling thread is interrupted, ETIMEDOUT at `deadline`: each family
/// turns these into its own errno.
pub fn wait_for<T>(
    queue: &Queue,
    deadline: Option<Instant>,
    mut attempt: impl FnMut() -> Result<Option<T>, Errno>,
) -> Result<T, Errno> {
    if let Some(v) = attempt()? {
        return Ok(v);
    }
    let w = Waiter::new();
    let _r = Registered::new(Entry::new(ALL, w.clone()), |e| queue.register(e), |e| queue.unregister(e));
    loop {
        if let Some(v) = attempt()? {
            return Ok(v);
        }
        w.wait(deadline)?;
    }
}

/// The sandbox's ipc namespace: what the three families hold.
pub struct Namespace {
    pub shm: Arc<shm::Registry>,
    pub sem: sem::Registry,
    pub msg: msg::Registry,
    /// Its identity (`/proc/PID/ns/ipc`).
    pub ino: u64,
}

/// The sandbox's first ipc namespace.
impl Default for Namespace {
    fn default() -> Namespace {
        Namespace {
            shm: Arc::default(),
            sem: sem::Registry::default(),
            msg: msg::Registry::default(),
            ino: crate::vfs::nsid::IPC_INIT_INO,
        }
    }
}

impl Namespace {
    /// A new, empty namespace (`unshare`, `clone` with CLONE_NEWIPC).
    pub fn new_unshared() -> Namespace {
        Namespace { ino: crate::vfs::nsid::alloc(), ..Namespace::default() }
    }

    /// Process `tgid` has exited: its semaphore adjustments (SEM_UNDO) are
    /// applied.
    pub fn process_exited(&self, tgid: i32) {
        self.sem.undo_exit(tgid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(uid: u32, gid: u32) -> Credentials {
        Credentials::new(uid, gid)
    }

    #[test]
    fn ids_carry_a_sequence_so_stale_ids_miss() {
        let t: Table<u32> = Table::default();
        let root = creds(0, 0);
        let req = GetRequest { key: IPC_PRIVATE, flags: 0o600 };
        let a = t.get(req, &root, 16, |_| Ok(()), |_, _| Ok(1)).unwrap();
        assert_eq!(a, 0);
        let obj = t.with(a, |s| Ok(s.obj.clone())).unwrap();
        t.remove(a, &obj);
        let b = t.get(req, &root, 16, |_| Ok(()), |_, _| Ok(2)).unwrap();
        assert_eq!(b, 32768, "the same index with the next sequence number");
        assert_eq!(t.with(a, |_| Ok(())).err(), Some(Errno::EINVAL));
        assert_eq!(t.with(-1, |_| Ok(())).err(), Some(Errno::EINVAL));
        assert_eq!(t.at_index(0).unwrap().0, b);
    }

    #[test]
    fn keys_find_create_and_exclude() {
        let t: Table<u32> = Table::default();
        let root = creds(0, 0);
        let get = |key, flags| t.get(GetRequest { key, flags }, &root, 2, |_| Ok(()), |_, _| Ok(0));
        assert_eq!(get(7, 0o600), Err(Errno::ENOENT));
        let id = get(7, IPC_CREAT | 0o600).unwrap();
        assert_eq!(get(7, 0), Ok(id));
        assert_eq!(get(7, IPC_CREAT), Ok(id));
        assert_eq!(get(7, IPC_CREAT | IPC_EXCL), Err(Errno::EEXIST));
        get(IPC_PRIVATE, 0).unwrap();
        assert_eq!(get(IPC_PRIVATE, 0), Err(Errno::ENOSPC), "past the limit of 2");
        assert_eq!(t.max_index(), 1);
    }

    #[test]
    fn permissions_follow_owner_group_and_other_bits() {
        let t: Table<u32> = Table::default();
        let owner = creds(1000, 1000);
        let id = t.get(GetRequest { key: 5, flags: IPC_CREAT | 0o640 }, &owner, 8, |_| Ok(()), |_, _| Ok(0)).unwrap();
        let group = creds(2000, 1000);
        let other = creds(3000, 3000);
        assert!(t.lookup(id, &owner, MAY_READ | MAY_WRITE).is_ok());
        assert!(t.lookup(id, &group, MAY_READ).is_ok());
        assert_eq!(t.lookup(id, &group, MAY_WRITE).err(), Some(Errno::EACCES));
        assert_eq!(t.lookup(id, &other, MAY_READ).err(), Some(Errno::EACCES));
        // Root has CAP_IPC_OWNER.
        assert!(t.lookup(id, &creds(0, 0), MAY_WRITE).is_ok());
        // The *get flags' mode bits are the access asked for.
        let get = |c: &Credentials, flags| t.get(GetRequest { key: 5, flags }, c, 8, |_| Ok(()), |_, _| Ok(0));
        assert_eq!(get(&other, 0), Ok(id));
        assert_eq!(get(&other, 0o400), Err(Errno::EACCES));
        let perm = t.with(id, |s| Ok(s.perm)).unwrap();
        assert_eq!(perm.check_owner(&other), Err(Errno::EPERM));
        assert!(perm.check_owner(&owner).is_ok());
    }
}
