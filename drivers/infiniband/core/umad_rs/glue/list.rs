// SPDX-License-Identifier: GPL-2.0

//! A doubly linked list that owns its items, linked through the items
//! themselves, each an object of a slab cache ([`SlabBox`]): pushing and
//! removing allocate nothing, and an item can be taken out from the middle
//! by its address.
//!
//! `kernel::list::List` links `ListArc`s, reference-counted items; these are
//! uniquely owned objects of a cache of their own, whose boxes give them
//! back to it.
//!
//! # Examples
//!
//! ```
//! use kernel::slab::{
//!     list::{impl_linked, BoxList, Links},
//!     SlabCache, UserCopy,
//! };
//!
//! struct Item {
//!     links: Links<Item>,
//!     value: u32,
//! }
//! impl_linked!(Item { links });
//!
//! static ITEMS: SlabCache<Item> =
//!     SlabCache::new(c"rust_doctest_box_list", UserCopy { offset: 0, size: 0 });
//!
//! // SAFETY: every box goes before the guard, and nothing allocates after
//! // that.
//! let guard = unsafe { ITEMS.create() }?;
//! let mut list = BoxList::new();
//! for value in 1..=3 {
//!     list.push_back(ITEMS.alloc(Item { links: Links::new(), value })?);
//! }
//! let last = list.push_back(ITEMS.alloc(Item { links: Links::new(), value: 4 })?);
//! // SAFETY: `last` is in `list`.
//! let item = unsafe { list.remove(last) };
//! let removed = item.value;
//! list.push_front(item);
//! let mut order = [0; 4];
//! for (slot, item) in order.iter_mut().zip(list.iter()) {
//!     *slot = item.value;
//! }
//! let first = list.pop_front().map(|item| item.value);
//! // Every box goes back to the cache before it is destroyed, and before
//! // any assertion: a failed one ends the test without dropping anything.
//! drop(list);
//! drop(guard);
//! assert_eq!((removed, order, first), (4, [4, 1, 2, 3], Some(4)));
//! # Ok::<(), Error>(())
//! ```
//!
//! Upstream counterpart: `kernel::list::List` (`rust/kernel/list.rs`),
//! whose items are `ListArc`s; one over boxes of a slab cache would replace
//! this file.

use crate::glue::slab::{SlabBox, SlabCache};
use core::ptr::{self, NonNull};

/// An item's links to its neighbours in the one list that owns it, and the
/// cache it goes back to; all null in none.
pub(crate) struct Links<T: 'static> {
    next: *mut T,
    prev: *mut T,
    cache: *const SlabCache<T>,
}

impl<T> Links<T> {
    /// The links of an item in no list.
    pub(crate) const fn new() -> Self {
        Self {
            next: ptr::null_mut(),
            prev: ptr::null_mut(),
            cache: ptr::null(),
        }
    }
}

impl<T> Default for Links<T> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the links are followed only by the list that owns the item,
// through `&mut` to it or a shared borrow of it.
unsafe impl<T: Send> Send for Links<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Links<T> {}

/// An item that [`BoxList`]s link through its [`Links`]; implement it with
/// [`impl_linked!`].
///
/// # Safety
///
/// `links` returns a pointer to the same `Links` field of `this` every time.
pub(crate) unsafe trait Linked: Sized + 'static {
    /// The item's links.
    ///
    /// # Safety
    ///
    /// `this` points to a valid item.
    unsafe fn links(this: *mut Self) -> *mut Links<Self>;
}

/// `impl Linked for $item`, linked through its field `$field`, which has
/// the type `Links<$item>`.
macro_rules! impl_linked {
    ($item:ty { $field:ident }) => {
        // SAFETY: `links` projects to the one `$field`, at its offset in
        // the item (`offset_of!` names the item's own fields only, never
        // one reached through `Deref`), whose type the constant checks.
        unsafe impl $crate::glue::list::Linked for $item {
            unsafe fn links(this: *mut Self) -> *mut $crate::glue::list::Links<Self> {
                const _: fn(&$item) -> &$crate::glue::list::Links<$item> = |item| &item.$field;
                // SAFETY: `this` is valid, as the caller promises, so the
                // field lies within it.
                unsafe { this.byte_add(::core::mem::offset_of!($item, $field)).cast() }
            }
        }
    };
}
pub(crate) use impl_linked;

/// A list of boxes, linked through them.
///
/// # Invariants
///
/// `first` and `last` are null together, or the ends of a chain of items
/// linked through their `Links` both ways, each an item the list owns (a
/// box given up with `SlabBox::into_raw`, whose cache its links hold), in
/// no other list. An item in no list has null links.
pub(crate) struct BoxList<T: Linked> {
    first: *mut T,
    last: *mut T,
}

// SAFETY: the list owns its items, which are `Send`.
unsafe impl<T: Linked + Send> Send for BoxList<T> {}
// SAFETY: a shared list only lends its items out shared (`iter`), which
// `Sync` items allow.
unsafe impl<T: Linked + Sync> Sync for BoxList<T> {}

impl<T: Linked> BoxList<T> {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        // INVARIANT: empty.
        Self {
            first: ptr::null_mut(),
            last: ptr::null_mut(),
        }
    }

    /// Appends an item; returns where it is, for `remove`.
    pub(crate) fn push_back(&mut self, item: SlabBox<T>) -> NonNull<T> {
        self.link(item, self.last, ptr::null_mut())
    }

    /// Prepends an item.
    pub(crate) fn push_front(&mut self, item: SlabBox<T>) {
        self.link(item, ptr::null_mut(), self.first);
    }

    /// Links `item` in between `prev` and `next`, neighbours in this list
    /// or null at its ends (`remove`'s inverse); returns where it is.
    fn link(&mut self, item: SlabBox<T>, prev: *mut T, next: *mut T) -> NonNull<T> {
        let cache = SlabBox::cache(&item);
        let new = item.into_raw();
        let p = new.as_ptr();
        // INVARIANT: the list takes the box it was given, which is in no
        // list, keeps its cache, and links it both ways in between two
        // neighbours.
        // SAFETY: `p` is ours and in no list; `prev` and `next`, where not
        // null, are adjacent items of this list, which `&mut self` gives us
        // alone.
        unsafe {
            *T::links(p) = Links { next, prev, cache };
            match NonNull::new(prev) {
                None => self.first = p,
                Some(prev) => (*T::links(prev.as_ptr())).next = p,
            }
            match NonNull::new(next) {
                None => self.last = p,
                Some(next) => (*T::links(next.as_ptr())).prev = p,
            }
        }
        new
    }

    /// Takes the first item out of the list, if any.
    pub(crate) fn pop_front(&mut self) -> Option<SlabBox<T>> {
        let first = NonNull::new(self.first)?;
        // SAFETY: the first item is in this list.
        Some(unsafe { self.remove(first) })
    }

    /// Takes `item` out of the list.
    ///
    /// # Safety
    ///
    /// `item` is in this list.
    pub(crate) unsafe fn remove(&mut self, item: NonNull<T>) -> SlabBox<T> {
        let p = item.as_ptr();
        // INVARIANT: the neighbours are linked to each other, and the item
        // leaves with null links.
        // SAFETY: `p` and its neighbours are items of this list, which owns
        // them and which `&mut self` gives us alone.
        unsafe {
            let Links { next, prev, cache } = ptr::replace(T::links(p), Links::new());
            match NonNull::new(prev) {
                None => self.first = next,
                Some(prev) => (*T::links(prev.as_ptr())).next = next,
            }
            match NonNull::new(next) {
                None => self.last = prev,
                Some(next) => (*T::links(next.as_ptr())).prev = prev,
            }
            // The list owned it as a box of the cache its links held.
            SlabBox::from_raw(item, &*cache)
        }
    }

    /// The items, first to last.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        let mut next = self.first;
        core::iter::from_fn(move || {
            let item = NonNull::new(next)?;
            // SAFETY: a non-null link is an item of this list, alive while
            // the list is borrowed.
            unsafe {
                next = (*T::links(item.as_ptr())).next;
                Some(&*item.as_ptr())
            }
        })
    }
}

impl<T: Linked> Default for BoxList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Linked> Drop for BoxList<T> {
    fn drop(&mut self) {
        while self.pop_front().is_some() {}
    }
}
