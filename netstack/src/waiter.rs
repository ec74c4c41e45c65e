//! Readiness notification. An endpoint owns a [`Queue`]; whoever wants to
//! know when the endpoint's state changes (a blocked reader, say)
//! registers a [`Notifier`] on it before trying the operation again.

use parking_lot::Mutex;
use std::sync::Arc;

/// Called when an endpoint's readiness may have changed.
pub trait Notifier: Send + Sync {
    fn notify(&self);

    /// Urgent data (TCP's urgent pointer) arrived: Linux sends SIGURG to
    /// the socket's owner then.
    fn urgent(&self) {}
}

/// The notifiers waiting on one endpoint.
#[derive(Default)]
pub struct Queue {
    waiters: Mutex<Vec<Arc<dyn Notifier>>>,
}

impl Queue {
    pub fn register(&self, n: Arc<dyn Notifier>) {
        self.waiters.lock().push(n);
    }

    pub fn unregister(&self, n: &Arc<dyn Notifier>) {
        self.waiters.lock().retain(|w| !Arc::ptr_eq(w, n));
    }

    /// Calls every registered notifier, outside the queue's lock.
    pub fn notify(&self) {
        let waiters: Vec<Arc<dyn Notifier>> = self.waiters.lock().clone();
        for w in waiters {
            w.notify();
        }
    }

    /// Tells every registered notifier that urgent data arrived.
    pub fn notify_urgent(&self) {
        let waiters: Vec<Arc<dyn Notifier>> = self.waiters.lock().clone();
        for w in waiters {
            w.urgent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Notifier for Count {
        fn notify(&self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn only_registered_notifiers_are_called() {
        let q = Queue::default();
        let c = Arc::new(Count::default());
        let n: Arc<dyn Notifier> = c.clone();
        q.notify();
        q.register(n.clone());
        q.notify();
        q.unregister(&n);
        q.notify();
        assert_eq!(c.0.load(Ordering::Relaxed), 1);
    }
}
