//! CL-object-dependent caching (PyOpenCL's `first_arg_dependent_memoize`,
//! `context_dependent_memoize` and `clear_first_arg_caches`, reference section 4).
//!
//! A [`FirstArgCache`] memoizes `f(object, args)` per CL object (a context, a device) and argument
//! tuple. Every cache registers itself in a process-wide list so that
//! [`clear_first_arg_caches`] empties them all (PyOpenCL also runs it at exit and before each new
//! test context). Unlike PyOpenCL's, the cache is thread-safe, computes a missing value outside its
//! lock (the computation may use the cache), and entries of one object can be dropped on their own
//! ([`FirstArgCache::remove_object`]) - what a context destructor callback calls.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// Something [`clear_first_arg_caches`] can clear.
trait Clearable: Send + Sync {
    fn clear_all(&self);
}

type Registry = Mutex<Vec<Weak<dyn Clearable>>>;

static REGISTRY: Registry = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Empties every live [`FirstArgCache`] (PyOpenCL's `clear_first_arg_caches()`); caches stay
/// registered. Returns how many caches were cleared.
pub fn clear_first_arg_caches() -> usize {
    let caches: Vec<Arc<dyn Clearable>> = {
        let mut reg = lock(&REGISTRY);
        reg.retain(|w| w.strong_count() > 0);
        reg.iter().filter_map(Weak::upgrade).collect()
    };
    // Cleared outside the registry lock: dropping cached values may run arbitrary Drop code.
    for c in &caches {
        c.clear_all();
    }
    caches.len()
}

/// A memoization cache keyed by a CL object `K` and arguments `Args`.
///
/// # Examples
///
/// ```
/// use cl_pool::FirstArgCache;
///
/// let cache = FirstArgCache::<u32, (usize,), String>::new();
/// let mut calls = 0;
/// let v = cache.get_or_insert_with(&7, (3,), || { calls += 1; "x".repeat(3) });
/// let w = cache.get_or_insert_with(&7, (3,), || { calls += 1; String::new() });
/// assert_eq!((v.as_str(), w.as_str(), calls), ("xxx", "xxx", 1));
/// ```
pub struct FirstArgCache<K, Args, V> {
    map: Mutex<HashMap<K, HashMap<Args, V>>>,
}

impl<K, Args, V> fmt::Debug for FirstArgCache<K, Args, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = lock(&self.map);
        f.debug_struct("FirstArgCache")
            .field("objects", &m.len())
            .field("entries", &m.values().map(HashMap::len).sum::<usize>())
            .finish()
    }
}

impl<K, Args, V> Clearable for FirstArgCache<K, Args, V>
where
    K: Send,
    Args: Send,
    V: Send,
{
    fn clear_all(&self) {
        let old = std::mem::take(&mut *lock(&self.map));
        drop(old);
    }
}

impl<K, Args, V> FirstArgCache<K, Args, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    Args: Hash + Eq + Send + 'static,
    V: Clone + Send + 'static,
{
    /// A new, registered cache.
    #[must_use]
    pub fn new() -> Arc<Self> {
        let cache = Arc::new(Self {
            map: Mutex::new(HashMap::new()),
        });
        let as_dyn: Arc<dyn Clearable> = cache.clone();
        lock(&REGISTRY).push(Arc::downgrade(&as_dyn));
        cache
    }

    /// The cached value, if any.
    pub fn get(&self, object: &K, args: &Args) -> Option<V> {
        lock(&self.map).get(object)?.get(args).cloned()
    }

    /// The cached value, computing and storing it on a miss.
    pub fn get_or_insert_with(&self, object: &K, args: Args, f: impl FnOnce() -> V) -> V {
        match self.try_get_or_insert_with(object, args, || Ok::<V, std::convert::Infallible>(f())) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }

    /// The cached value, computing it on a miss; an error is returned and not cached.
    ///
    /// # Errors
    ///
    /// Whatever `f` returns.
    pub fn try_get_or_insert_with<E>(
        &self,
        object: &K,
        args: Args,
        f: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        if let Some(v) = lock(&self.map).get(object).and_then(|m| m.get(&args)) {
            return Ok(v.clone());
        }
        let v = f()?;
        let mut map = lock(&self.map);
        // If another thread stored a value meanwhile, keep the first one (memoization).
        let stored = map
            .entry(object.clone())
            .or_default()
            .entry(args)
            .or_insert(v);
        Ok(stored.clone())
    }

    /// Drops every entry of `object` (e.g. from a context destructor callback).
    pub fn remove_object(&self, object: &K) -> usize {
        let removed = lock(&self.map).remove(object);
        removed.map_or(0, |m| m.len())
    }

    /// Drops every entry.
    pub fn clear(&self) {
        self.clear_all();
    }

    /// Number of cached values.
    pub fn len(&self) -> usize {
        lock(&self.map).values().map(HashMap::len).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A [`cl_mem::Context`] as a cache key (PyOpenCL's `context_dependent_memoize` keys by the
/// context object): hashed by its handle, compared by identity, and holding a reference, so the
/// handle cannot be reused by a new context while an entry exists (as in PyOpenCL, cached
/// contexts stay alive until [`clear_first_arg_caches`] or [`FirstArgCache::remove_object`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextKey(pub cl_mem::Context);

impl Hash for ContextKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.0.as_raw() as usize).hash(state);
    }
}

impl From<&cl_mem::Context> for ContextKey {
    fn from(c: &cl_mem::Context) -> Self {
        Self(c.clone())
    }
}

/// A cache keyed by context (PyOpenCL's `context_dependent_memoize`).
pub type ContextCache<Args, V> = FirstArgCache<ContextKey, Args, V>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn same_object_and_args_compute_once() {
        let cache = FirstArgCache::<&'static str, (i32, i32), i32>::new();
        let calls = AtomicUsize::new(0);
        let f = |a: i32, b: i32| {
            calls.fetch_add(1, Ordering::SeqCst);
            a + b
        };
        assert_eq!(cache.get_or_insert_with(&"ctx1", (1, 2), || f(1, 2)), 3);
        assert_eq!(cache.get_or_insert_with(&"ctx1", (1, 2), || f(1, 2)), 3);
        assert_eq!(cache.get_or_insert_with(&"ctx2", (1, 2), || f(1, 2)), 3);
        assert_eq!(cache.get_or_insert_with(&"ctx1", (2, 2), || f(2, 2)), 4);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.remove_object(&"ctx1"), 2);
        assert_eq!(cache.get(&"ctx2", &(1, 2)), Some(3));
        assert_eq!(cache.get(&"ctx1", &(1, 2)), None);
    }

    #[test]
    fn errors_are_not_cached() {
        let cache = FirstArgCache::<u8, (), u8>::new();
        let r: Result<u8, &str> = cache.try_get_or_insert_with(&1, (), || Err("boom"));
        assert_eq!(r, Err("boom"));
        assert!(cache.is_empty());
        let r: Result<u8, &str> = cache.try_get_or_insert_with(&1, (), || Ok(5));
        assert_eq!(r, Ok(5));
    }

    #[test]
    fn clear_first_arg_caches_empties_every_live_cache() {
        let a = FirstArgCache::<u8, (), u8>::new();
        let b = FirstArgCache::<u16, (), u8>::new();
        a.get_or_insert_with(&1, (), || 1);
        b.get_or_insert_with(&1, (), || 1);
        let dropped = FirstArgCache::<u32, (), u8>::new();
        drop(dropped);
        assert!(clear_first_arg_caches() >= 2);
        assert!(a.is_empty());
        assert!(b.is_empty());
        // Still registered: filled again, cleared again.
        a.get_or_insert_with(&1, (), || 2);
        clear_first_arg_caches();
        assert!(a.is_empty());
    }

    #[test]
    fn computation_may_reenter_the_cache() {
        let cache = FirstArgCache::<u8, u8, u8>::new();
        let v = cache.get_or_insert_with(&0, 1, || cache.get_or_insert_with(&0, 2, || 20) + 1);
        assert_eq!(v, 21);
        assert_eq!(cache.len(), 2);
    }
}
