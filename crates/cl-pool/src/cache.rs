//! CL-object-dependent caching (PyOpenCL's `first_arg_dependent_memoize`,
//! `context_dependent_memoize` and `clear_first_arg_caches`, reference section 4).
//!
//! A [`FirstArgCache`] memoizes `f(object, args)` per CL object (a context, a device) and argument
//! tuple. Every cache registers itself in a process-wide list so that
//! [`clear_first_arg_caches`] empties them all (PyOpenCL also runs it at exit and before each new
//! test context). Unlike PyOpenCL's, the cache is thread-safe, computes a missing value outside its
//! lock (the computation may use the cache), and entries of one object can be dropped on their own
//! ([`FirstArgCache::remove_object`]).
//!
//! [`ContextCache`] keys by context and, on OpenCL 3.0+ platforms, drops a context's entries from
//! the context's destructor callback without keeping the context alive (PyOpenCL's cache holds the
//! context until `clear_first_arg_caches()`); on older platforms its entries hold the context, as
//! in PyOpenCL. See [`ContextCache`] for the rules.

use cl_mem::RawHandle;
use std::collections::{HashMap, HashSet};
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

    /// The cached value, computing and storing it on a miss. `f` runs outside the cache's lock
    /// (it may use the cache); when another thread stored a value meanwhile, that first value
    /// is kept and returned. For a computation that can fail, look up with [`get`](Self::get)
    /// first and store only a success: `match cache.get(&o, &args) { Some(v) => v, None => {
    /// let v = f()?; cache.get_or_insert_with(&o, args, || v) } }`.
    pub fn get_or_insert_with(&self, object: &K, args: Args, f: impl FnOnce() -> V) -> V {
        if let Some(v) = self.get(object, &args) {
            return v;
        }
        let v = f();
        self.insert_first(object.clone(), args, v)
    }

    /// Stores `v` unless a value is there already (another thread's: memoization keeps the
    /// first); returns the stored value. The losing value is dropped outside the lock.
    fn insert_first(&self, object: K, args: Args, v: V) -> V {
        let mut map = lock(&self.map);
        let per_object = map.entry(object).or_default();
        if let Some(existing) = per_object.get(&args) {
            let existing = existing.clone();
            drop(map);
            drop(v);
            return existing;
        }
        per_object.insert(args, v.clone());
        v
    }

    /// Re-inserts `object`'s entries under `object` itself (its key value replaces an equal one).
    fn rekey(&self, object: &K) {
        let mut map = lock(&self.map);
        if let Some(entries) = map.remove(object) {
            map.insert(object.clone(), entries);
        }
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

/// A context as a key of [`ContextCache`]: hashed and compared by its raw handle.
///
/// Weak (no reference held) when the cache evicts the context's entries from its destructor
/// callback; strong (holding a [`cl_mem::Context`]) where no callback could be registered (a
/// platform older than OpenCL 3.0), so that the handle cannot be reused by a new context while an
/// entry of the old one exists.
#[derive(Clone)]
struct ContextKey {
    raw: usize,
    keep_alive: Option<cl_mem::Context>,
}

impl ContextKey {
    fn weak(context: &cl_mem::Context) -> Self {
        Self {
            raw: context.as_raw() as usize,
            keep_alive: None,
        }
    }
}

impl fmt::Debug for ContextKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextKey")
            .field("raw", &format_args!("{:#x}", self.raw))
            .field("strong", &self.keep_alive.is_some())
            .finish()
    }
}

impl PartialEq for ContextKey {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl Eq for ContextKey {}

impl Hash for ContextKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}

/// A cache keyed by context and arguments (PyOpenCL's `context_dependent_memoize`), whose entries
/// go away with their context.
///
/// **Lifetime of entries.** On OpenCL 3.0+ platforms the cache does not keep the context alive:
/// it keys entries by the raw handle and registers a context destructor callback
/// (`clSetContextDestructorCallback`, through [`cl_mem::Context::on_destroy`]) the first time it
/// stores a value for a context; when the last reference to the context is released the callback
/// drops that context's entries (the handle may be reused only after that, so a new context never
/// sees an old context's values; on PoCL 3.0 and the Intel CPU runtime the callback runs inside the
/// last `clReleaseContext`, so the entries are gone when that drop returns). On older platforms (OpenCL 1.x, 2.x: no destructor callback) an
/// entry holds a reference to its context, as PyOpenCL's cache does: the context and its entries
/// live until [`clear_first_arg_caches`], [`ContextCache::clear`] or
/// [`ContextCache::remove_context`]. A cached value that itself holds the context (a program, a
/// buffer) keeps the context alive on any platform, so the callback cannot fire: clear such
/// caches explicitly.
///
/// # Examples
///
/// ```no_run
/// # fn main() -> Result<(), cl_mem::Error> {
/// let device = cl_mem::Platform::list()?[0].devices(cl_mem::DeviceType::ALL)?[0];
/// let context = cl_mem::Context::new(&[device])?;
/// let cache = cl_pool::ContextCache::<(u32,), u64>::new();
/// let v = cache.get_or_insert_with(&context, (5,), || 42);
/// assert_eq!(v, 42);
/// drop(context); // on OpenCL 3.0+, the entry is gone now
/// # Ok(())
/// # }
/// ```
pub struct ContextCache<Args, V> {
    cache: Arc<FirstArgCache<ContextKey, Args, V>>,
    /// Raw handles of contexts whose destructor callback (for this cache) is registered.
    watched: Arc<Mutex<HashSet<usize>>>,
}

impl<Args, V> fmt::Debug for ContextCache<Args, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextCache")
            .field("cache", &self.cache)
            .field("watched_contexts", &lock(&self.watched).len())
            .finish()
    }
}

impl<Args, V> ContextCache<Args, V>
where
    Args: Hash + Eq + Send + 'static,
    V: Clone + Send + 'static,
{
    /// A new cache, registered for [`clear_first_arg_caches`].
    #[must_use]
    pub fn new() -> Self {
        Self {
            cache: FirstArgCache::new(),
            watched: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// The cached value, if any.
    pub fn get(&self, context: &cl_mem::Context, args: &Args) -> Option<V> {
        self.cache.get(&ContextKey::weak(context), args)
    }

    /// The cached value, computing and storing it on a miss (as
    /// [`FirstArgCache::get_or_insert_with`]; for a computation that can fail, [`get`](Self::get)
    /// first and store only a success).
    pub fn get_or_insert_with(
        &self,
        context: &cl_mem::Context,
        args: Args,
        f: impl FnOnce() -> V,
    ) -> V {
        if let Some(v) = self.get(context, &args) {
            return v;
        }
        let v = f();
        let key = self.key_for(context);
        self.cache.insert_first(key, args, v)
    }

    /// The key under which `context`'s entries are stored: weak once the destructor callback is
    /// registered, strong where it cannot be.
    fn key_for(&self, context: &cl_mem::Context) -> ContextKey {
        let raw = context.as_raw() as usize;
        if context.devices()[0].platform_version() < cl_mem::Version::V3_0 {
            return ContextKey {
                raw,
                keep_alive: Some(context.clone()),
            };
        }
        // Claimed before registering (no driver call under our lock); a concurrent first insert
        // for the same context then uses a weak key at once.
        if !lock(&self.watched).insert(raw) {
            return ContextKey::weak(context);
        }
        let cache = Arc::downgrade(&self.cache);
        let watched = Arc::downgrade(&self.watched);
        let registered = context.on_destroy(move || {
            if let Some(w) = watched.upgrade() {
                lock(&w).remove(&raw);
            }
            if let Some(c) = cache.upgrade() {
                c.remove_object(&ContextKey {
                    raw,
                    keep_alive: None,
                });
            }
        });
        match registered {
            Ok(()) => ContextKey::weak(context),
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "context cache: no destructor callback; entries keep their context alive"
                );
                lock(&self.watched).remove(&raw);
                let strong = ContextKey {
                    raw,
                    keep_alive: Some(context.clone()),
                };
                // Entries another thread stored meanwhile under a weak key become strong.
                self.cache.rekey(&strong);
                strong
            }
        }
    }

    /// Drops every entry of `context` now; returns how many there were.
    pub fn remove_context(&self, context: &cl_mem::Context) -> usize {
        self.cache.remove_object(&ContextKey::weak(context))
    }

    /// Whether entries of `context` are dropped by its destructor callback (an OpenCL 3.0+
    /// platform, callback registered) rather than kept with a reference to it.
    pub fn evicts_on_destroy(&self, context: &cl_mem::Context) -> bool {
        lock(&self.watched).contains(&(context.as_raw() as usize))
    }

    /// Drops every entry (destructor callbacks stay registered and remain harmless).
    pub fn clear(&self) {
        self.cache.clear();
    }

    /// Number of cached values.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Number of contexts with at least one cached value.
    pub fn contexts(&self) -> usize {
        lock(&self.cache.map).len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}

impl<Args, V> Default for ContextCache<Args, V>
where
    Args: Hash + Eq + Send + 'static,
    V: Clone + Send + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

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
        // The documented pattern for a computation that can fail.
        let get_or_try = |f: fn() -> Result<u8, &'static str>| match cache.get(&1, &()) {
            Some(v) => Ok(v),
            None => {
                let v = f()?;
                Ok(cache.get_or_insert_with(&1, (), || v))
            }
        };
        assert_eq!(get_or_try(|| Err("boom")), Err("boom"));
        assert!(cache.is_empty());
        assert_eq!(get_or_try(|| Ok(5)), Ok(5));
        assert_eq!(get_or_try(|| Err("not computed again")), Ok(5));
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
        // The same entry from inside `f`: the inner value is stored first and kept, as when
        // another thread wins the race; the outer value is dropped.
        let v = cache.get_or_insert_with(&1, 1, || cache.get_or_insert_with(&1, 1, || 7) + 1);
        assert_eq!((v, cache.get(&1, &1)), (7, Some(7)));
        // Clearing from inside `f` neither deadlocks nor loses the value being computed.
        let v = cache.get_or_insert_with(&2, 1, || {
            cache.clear();
            9
        });
        assert_eq!((v, cache.len()), (9, 1));
    }
}
