// SPDX-License-Identifier: GPL-2.0

//! A slab cache of one type (`struct kmem_cache`) and the box of an object
//! from it (the `kernel` crate's boxes and `Arc`s all come from `kmalloc`,
//! through `krealloc`). A cache is a `static`, made when the module loads
//! and destroyed when it unloads.
//!
//! C header: [`include/linux/slab.h`](srctree/include/linux/slab.h).
//!
//! Upstream counterpart: none yet (a `kernel::alloc::KmemCache` has been
//! proposed); it would replace this file.

use super::bindings;
use kernel::{prelude::*, str::CStr};

use core::{
    marker::PhantomData,
    mem::{align_of, size_of},
    ops::{Deref, DerefMut},
    ptr::{self, NonNull},
    sync::atomic::{AtomicBool, AtomicPtr, Ordering},
};

/// A slab cache of `T`s; empty until `create`.
///
/// # Examples
///
/// ```
/// use kernel::slab::{SlabCache, UserCopy};
///
/// static CACHE: SlabCache<[u8; 64]> =
///     SlabCache::new(c"rust_doctest_slab", UserCopy { offset: 0, size: 64 });
///
/// // SAFETY: the box is dropped before the guard, and nothing allocates
/// // after that.
/// let guard = unsafe { CACHE.create() }?;
/// // SAFETY: as above, for a second guard, which cannot be had.
/// assert!(unsafe { CACHE.create() }.is_err());
/// let mut object = CACHE.alloc([7; 64])?;
/// object[1] = 8;
/// assert_eq!((object[0], object[1]), (7, 8));
/// drop(object);
/// drop(guard);
/// # Ok::<(), Error>(())
/// ```
///
/// # Invariants
///
/// `raw` is null, or a live cache of objects sized and aligned for a `T`
/// that `create` made and that its [`CacheGuard`] destroys. `raw` is not
/// null only while `created` is set: one guard at a time. `user_copy` lies
/// within a `T`.
pub(crate) struct SlabCache<T> {
    raw: AtomicPtr<bindings::kmem_cache>,
    created: AtomicBool,
    name: &'static CStr,
    user_copy: UserCopy,
    _objects: PhantomData<T>,
}

/// The bytes of a cache's objects that may be copied to or from user
/// memory directly: `size` bytes at `offset` (`kmem_cache_create_usercopy`).
/// Hardened usercopy stops any other copy of a cache object with a BUG,
/// and a cache with such a region is never merged with another.
#[derive(Clone, Copy)]
pub(crate) struct UserCopy {
    /// Where the region starts in an object.
    pub(crate) offset: usize,
    /// How many bytes it has.
    pub(crate) size: usize,
}

// SAFETY: the cache is the kernel's, made for use from any task; the
// objects it hands out are owned by `SlabBox`es, `Send` when `T` is.
unsafe impl<T: Send> Sync for SlabCache<T> {}

/// The cache exists while this lives.
///
/// # Invariants
///
/// Every box of the cache is freed before the guard is dropped (the
/// promise `SlabCache::create`'s caller made).
pub(crate) struct CacheGuard<T: 'static>(&'static SlabCache<T>);

impl<T> SlabCache<T> {
    /// A cache named `name` whose objects' `user_copy` bytes may be copied
    /// to and from user memory. A region outside a `T` does not build (in a
    /// `static`) or panics.
    pub(crate) const fn new(name: &'static CStr, user_copy: UserCopy) -> Self {
        assert!(user_copy.offset <= size_of::<T>());
        assert!(user_copy.size <= size_of::<T>() - user_copy.offset);
        // INVARIANT: null; the region was checked above.
        Self {
            raw: AtomicPtr::new(ptr::null_mut()),
            created: AtomicBool::new(false),
            name,
            user_copy,
            _objects: PhantomData,
        }
    }

    /// Makes the cache (`kmem_cache_create`); `EBUSY` while a guard of
    /// an earlier call lives, whose cache a second one would replace.
    ///
    /// # Safety
    ///
    /// Every [`SlabBox`] from the cache is dropped before the returned
    /// guard is (a box frees its object into the cache), and no `alloc`
    /// runs once the guard starts to drop (it destroys the cache).
    pub(crate) unsafe fn create(&'static self) -> Result<CacheGuard<T>> {
        if self.created.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        let raw = match self.new_cache() {
            Ok(raw) => raw,
            Err(e) => {
                self.created.store(false, Ordering::Release);
                return Err(e);
            }
        };
        // INVARIANT: a live cache for `T`s, which the guard destroys; this
        // call set `created`.
        self.raw.store(raw.as_ptr(), Ordering::Release);
        // INVARIANT: the caller promised.
        Ok(CacheGuard(self))
    }

    /// A new `kmem_cache` for this cache's objects.
    fn new_cache(&self) -> Result<NonNull<bindings::kmem_cache>> {
        let size = u32::try_from(size_of::<T>())?;
        let align = u32::try_from(align_of::<T>())?;
        let user_offset = u32::try_from(self.user_copy.offset)?;
        let user_size = u32::try_from(self.user_copy.size)?;
        // SAFETY: `name` is 'static, as the cache keeps it; the user copy
        // region lies within an object (type invariant).
        let raw = unsafe {
            bindings::kmem_cache_create_usercopy(
                self.name.as_char_ptr(),
                size,
                align,
                0,
                user_offset,
                user_size,
                None,
            )
        };
        NonNull::new(raw).ok_or(ENOMEM)
    }

    /// A `T` in an object of the cache, which must have been made.
    pub(crate) fn alloc(&'static self, value: T) -> Result<SlabBox<T>> {
        let raw = self.raw.load(Ordering::Acquire);
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `raw` is a live cache (it goes only with the guard, after
        // every object), whose objects hold a `T`.
        let object = unsafe { bindings::kmem_cache_alloc(raw, kernel::bindings::GFP_KERNEL) };
        let object = NonNull::new(object.cast::<T>()).ok_or(ENOMEM)?;
        // SAFETY: a fresh object, sized and aligned for a `T`.
        unsafe { object.as_ptr().write(value) };
        // INVARIANT: an object of this live cache, holding `value`.
        Ok(SlabBox {
            ptr: object,
            cache: self,
        })
    }
}

impl<T> Drop for CacheGuard<T> {
    fn drop(&mut self) {
        let raw = self.0.raw.swap(ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: made by `create`; no object is left, by the type
        // invariants.
        unsafe { bindings::kmem_cache_destroy(raw) };
        // INVARIANT: `raw` is null again.
        self.0.created.store(false, Ordering::Release);
    }
}

/// An owned `T` in an object of a slab cache, freed on drop.
///
/// # Invariants
///
/// `ptr` is an object of `cache`, which is live while the box is (its
/// guard goes only after every box), holding a valid `T` the box owns.
pub(crate) struct SlabBox<T: 'static> {
    ptr: NonNull<T>,
    cache: &'static SlabCache<T>,
}

// SAFETY: owns its `T` as a `KBox` does.
unsafe impl<T: Send> Send for SlabBox<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for SlabBox<T> {}

impl<T> SlabBox<T> {
    /// Gives up the box: the `T` stays until `from_raw` takes it back.
    pub(crate) fn into_raw(self) -> NonNull<T> {
        let ptr = self.ptr;
        core::mem::forget(self);
        ptr
    }

    /// The cache the box's object belongs to (an associated function, so
    /// that it does not hide a method of `T`).
    pub(crate) fn cache(this: &Self) -> &'static SlabCache<T> {
        this.cache
    }

    /// Takes back a box that `into_raw` gave up.
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw` of a box of `cache`, and is taken back
    /// once.
    pub(crate) unsafe fn from_raw(ptr: NonNull<T>, cache: &'static SlabCache<T>) -> Self {
        // INVARIANT: the caller promised a box's object, given up.
        Self { ptr, cache }
    }
}

impl<T> Deref for SlabBox<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the box owns a live `T`.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for SlabBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` makes this the only view.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for SlabBox<T> {
    fn drop(&mut self) {
        // SAFETY: the box owns the `T`, dropped once here; the object came
        // from `cache`, live by the type invariants.
        unsafe {
            ptr::drop_in_place(self.ptr.as_ptr());
            bindings::kmem_cache_free(
                self.cache.raw.load(Ordering::Relaxed),
                self.ptr.as_ptr().cast(),
            );
        }
    }
}
