//! Per-sandbox state that the layers above the kernel keep (the names
//! bound by Unix sockets, the message-queue registry, the terminals, the
//! memfd filesystem …), held by the kernel without the kernel naming its
//! type: each layer asks for its own state by type and gets the sandbox's
//! one instance, made on first use. This keeps the dependency direction:
//! filesystems and handlers use the kernel, never the reverse (gVisor's
//! kernel holds such state behind interfaces for the same reason).

use parking_lot::Mutex;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

type Entry = Arc<dyn Any + Send + Sync>;

/// One instance of each registered type.
#[derive(Default)]
pub(crate) struct Extensions {
    map: Mutex<HashMap<TypeId, Entry>>,
}

impl Extensions {
    /// The sandbox's instance of `T`, made with `T::default()` on first use.
    pub(crate) fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut map = self.map.lock();
        let entry = map.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(T::default())).clone();
        match entry.downcast::<T>() {
            Ok(t) => t,
            // The map is keyed by the entry's own type id, so this cannot
            // happen; a fresh instance keeps the answer well-typed anyway.
            Err(_) => {
                let t = Arc::new(T::default());
                map.insert(TypeId::of::<T>(), t.clone());
                t
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[derive(Default)]
    struct Counter(AtomicU32);

    #[derive(Default)]
    struct Other(AtomicU32);

    #[test]
    fn one_instance_per_type() {
        let e = Extensions::default();
        e.get::<Counter>().0.fetch_add(1, Ordering::Relaxed);
        e.get::<Counter>().0.fetch_add(1, Ordering::Relaxed);
        assert_eq!(e.get::<Counter>().0.load(Ordering::Relaxed), 2);
        assert_eq!(e.get::<Other>().0.load(Ordering::Relaxed), 0);
        assert!(Arc::ptr_eq(&e.get::<Other>(), &e.get::<Other>()));
    }
}
