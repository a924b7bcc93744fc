// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What differs between the `kernel` crates ib_umad_rs builds against.
//! Every version difference lives here, chosen by feature probes on the
//! kernel tree (see `Kbuild`), never by version numbers: stable kernels
//! carry backports.
//!
//! Probes are used elsewhere in two cases: `umad_rs_kunit_tests` puts
//! `rules/`'s unit tests under `#[kunit_tests]`, an attribute that has to
//! sit on the test module itself; and what the patch series moves into the
//! kernel crate (`infiniband/` and the glue that `tools/upstream/
//! abstractions` lists) carries its few differences itself, as `#[cfg]`s
//! of statements and items that the series resolves for its tree
//! (`tools/upstream/intree.py`), with `umad_rs_in_kernel_crate` set there:
//! inside the crate it uses the crate's types and private items.
//!
//! In the kernel tree, the patch series resolves every probe for that tree
//! (`intree.py resolve`): this file keeps only its forms there, thin
//! wrappers over the crate.
//!
//! Upstream counterpart: none; this file shrinks as the oldest supported
//! kernel gains what it papers over.

use core::fmt;
use kernel::{error::Error, str::CStr, uaccess::UserSlice};

/// A held `Mutex<T>`'s guard (7.x names it `kernel::sync::MutexGuard`).
pub(crate) type MutexGuard<'a, T> =
    kernel::sync::lock::Guard<'a, T, kernel::sync::lock::mutex::MutexBackend>;

/// `EOPNOTSUPP`, which 6.12's `kernel::error::code` lacks.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-errno(kernel::bindings::EOPNOTSUPP))
}

/// `ETIMEDOUT` as a positive number, the status of a timeout report.
pub(crate) const ETIMEDOUT: u32 = kernel::bindings::ETIMEDOUT;

/// A positive errno constant of the bindings as a C int; errnos are small.
const fn errno(value: u32) -> i32 {
    assert!(value < 4096);
    // CAST: checked above to fit.
    #[allow(clippy::cast_possible_wrap)]
    let value = value as i32;
    value
}

/// `len` bytes of user memory at `addr`, which each access checks: 7.x
/// takes the address as a `UserPtr`, 6.12 as a plain `usize`.
pub(crate) fn user_slice(addr: usize, len: usize) -> UserSlice {
    #[cfg(umad_rs_user_ptr_struct)]
    let ptr = kernel::uaccess::UserPtr::from_addr(addr);
    #[cfg(not(umad_rs_user_ptr_struct))]
    let ptr = addr;
    UserSlice::new(ptr, len)
}

/// An open file, borrowed for a file operation: the `kernel` crate's
/// `File`, and the IO of a read or write: its `Kiocb` and IO vectors,
/// where it has them (the probe finds the last to come, `kernel::iov`);
/// 6.12's crate has none of them.
#[cfg(umad_rs_iov)]
pub(crate) use kernel::{
    fs::{File, Kiocb},
    iov::{IovIterDest, IovIterSource},
};
/// The same, of the module's own, with the methods the driver uses.
#[cfg(not(umad_rs_iov))]
pub(crate) use vfs::{File, IovIterDest, IovIterSource, Kiocb};

/// `kernel::fs`'s `File` and `Kiocb`, and `kernel::iov`'s IO vectors, in
/// their shape, with the methods the driver uses, for a crate without
/// them (6.12).
#[cfg(not(umad_rs_iov))]
mod vfs {
    use super::super::bindings;
    use core::{marker::PhantomData, mem::MaybeUninit, ptr::NonNull};
    use kernel::types::{ForeignOwnable, Opaque};

    /// An open file (`struct file`).
    ///
    /// # Invariants
    ///
    /// The file is valid, and no `fdget_pos` region that took no
    /// `f_pos_lock` holds it on this thread: the crate's `File` invariant
    /// as `MiscDevice` reads it (see `chrdev::file`).
    #[repr(transparent)]
    pub(crate) struct File(Opaque<bindings::file>);

    impl File {
        /// # Safety
        ///
        /// `ptr` points to a `struct file` that stays valid for `'a`, in
        /// no `fdget_pos` region that took no `f_pos_lock` on this thread.
        pub(crate) unsafe fn from_raw_file<'a>(ptr: *const bindings::file) -> &'a Self {
            // SAFETY: `Self` is transparent over a `struct file`; the rest
            // is the caller's promise.
            unsafe { &*ptr.cast() }
        }

        /// The `struct file`.
        pub(crate) fn as_ptr(&self) -> *mut bindings::file {
            self.0.get()
        }

        /// The file's flags (`f_flags`).
        pub(crate) fn flags(&self) -> u32 {
            // SAFETY: the file is valid. `fcntl(F_SETFL)` may write
            // `f_flags` meanwhile: a volatile read stands for C's
            // `READ_ONCE`, as the crate's `File::flags` has it.
            unsafe { core::ptr::addr_of!((*self.0.get()).f_flags).read_volatile() }
        }
    }

    /// A `struct kiocb` on a file whose private data is a `T`.
    ///
    /// # Invariants
    ///
    /// `inner` points at a valid `struct kiocb` whose file has a `T` as
    /// its private data, for `'a`.
    pub(crate) struct Kiocb<'a, T> {
        inner: NonNull<bindings::kiocb>,
        _phantom: PhantomData<&'a T>,
    }

    impl<'a, T: ForeignOwnable> Kiocb<'a, T> {
        /// # Safety
        ///
        /// `kiocb` references a valid `struct kiocb` for `'a`, whose
        /// file's private data is a `T`.
        pub(crate) unsafe fn from_raw(kiocb: *mut bindings::kiocb) -> Self {
            // INVARIANT: the caller's promise.
            Self {
                // SAFETY: a valid pointer is not null.
                inner: unsafe { NonNull::new_unchecked(kiocb) },
                _phantom: PhantomData,
            }
        }

        /// The `struct kiocb`.
        pub(crate) fn as_raw(&self) -> *mut bindings::kiocb {
            self.inner.as_ptr()
        }

        /// The file's private data.
        pub(crate) fn file(&self) -> T::Borrowed<'a> {
            // SAFETY: the kiocb and its file are valid (type invariants).
            let private = unsafe { (*(*self.as_raw()).ki_filp).private_data };
            // SAFETY: the file's private data is a `T` (type invariants),
            // which its operations may borrow.
            unsafe { T::borrow(private) }
        }
    }

    /// An IO vector to read from.
    ///
    /// # Invariants
    ///
    /// `iov` is a valid `struct iov_iter` with `data_source` set to
    /// `ITER_SOURCE`, which may be read from for `'data`.
    #[repr(transparent)]
    pub(crate) struct IovIterSource<'data> {
        iov: Opaque<bindings::iov_iter>,
        _source: PhantomData<&'data [u8]>,
    }

    impl<'data> IovIterSource<'data> {
        /// # Safety
        ///
        /// `ptr` is a valid `struct iov_iter`, used only through the
        /// returned reference for `'iov`, with `data_source` set to
        /// `ITER_SOURCE`, which may be read from for `'data`.
        pub(crate) unsafe fn from_raw<'iov>(ptr: *mut bindings::iov_iter) -> &'iov mut Self {
            // SAFETY: `ptr` is valid (the caller's promise).
            assert_eq!(unsafe { (*ptr).data_source }, bindings::ITER_SOURCE != 0);
            // SAFETY: `Self` is transparent over a `struct iov_iter`; the
            // rest is the caller's promise.
            unsafe { &mut *ptr.cast() }
        }

        /// The number of bytes left.
        pub(crate) fn len(&self) -> usize {
            // SAFETY: the IO vector is valid (type invariants).
            unsafe { iov_count(self.iov.get()) }
        }

        /// Reads into `out`; returns the part of it that was written (a
        /// borrow of `out`, where 7.3's signature ties it to `self`).
        pub(crate) fn copy_from_iter_raw<'out>(
            &mut self,
            out: &'out mut [MaybeUninit<u8>],
        ) -> &'out mut [u8] {
            let capacity = out.len();
            let out = out.as_mut_ptr().cast::<u8>();
            // SAFETY: the IO vector may be read from (type invariants);
            // `out` is valid for writes of `capacity` bytes.
            let len = unsafe { bindings::_copy_from_iter(out.cast(), capacity, self.iov.get()) };
            // SAFETY: `_copy_from_iter` wrote the first `len` bytes.
            unsafe { core::slice::from_raw_parts_mut(out, len) }
        }

        /// Reads into `out`; returns how many bytes it wrote there.
        pub(crate) fn copy_from_iter(&mut self, out: &mut [u8]) -> usize {
            // SAFETY: `copy_from_iter_raw` writes only initialised bytes,
            // so `out` stays a valid `u8` slice.
            let out = unsafe { &mut *(core::ptr::from_mut(out) as *mut [MaybeUninit<u8>]) };
            self.copy_from_iter_raw(out).len()
        }
    }

    /// An IO vector to write to.
    ///
    /// # Invariants
    ///
    /// `iov` is a valid `struct iov_iter` with `data_source` set to
    /// `ITER_DEST`, which may be written to for `'data`.
    #[repr(transparent)]
    pub(crate) struct IovIterDest<'data> {
        iov: Opaque<bindings::iov_iter>,
        _dest: PhantomData<&'data mut [u8]>,
    }

    impl<'data> IovIterDest<'data> {
        /// # Safety
        ///
        /// `ptr` is a valid `struct iov_iter`, used only through the
        /// returned reference for `'iov`, with `data_source` set to
        /// `ITER_DEST`, which may be written to for `'data`.
        pub(crate) unsafe fn from_raw<'iov>(ptr: *mut bindings::iov_iter) -> &'iov mut Self {
            // SAFETY: `ptr` is valid (the caller's promise).
            assert_eq!(unsafe { (*ptr).data_source }, bindings::ITER_DEST != 0);
            // SAFETY: `Self` is transparent over a `struct iov_iter`; the
            // rest is the caller's promise.
            unsafe { &mut *ptr.cast() }
        }

        /// The number of bytes left.
        pub(crate) fn len(&self) -> usize {
            // SAFETY: the IO vector is valid (type invariants).
            unsafe { iov_count(self.iov.get()) }
        }

        /// Writes `input`; returns how many bytes of it were written.
        pub(crate) fn copy_to_iter(&mut self, input: &[u8]) -> usize {
            // SAFETY: the IO vector may be written to (type invariants);
            // `input` is valid for reads of its length.
            unsafe { bindings::_copy_to_iter(input.as_ptr().cast(), input.len(), self.iov.get()) }
        }
    }

    /// `iov_iter_count`.
    ///
    /// # Safety
    ///
    /// `iov` is a valid `struct iov_iter`.
    unsafe fn iov_count(iov: *const bindings::iov_iter) -> usize {
        // SAFETY: the caller's promise; `count` is in the union's member
        // for every iterator type.
        unsafe { (*iov).__bindgen_anon_1.__bindgen_anon_1.as_ref().count }
    }
}

/// A file's wait queue, which a blocked read waits on without a lock and
/// which `poll` registers with, kept in the file's data: the `kernel`
/// crate's `PollCondVar` and `PollTable`, where its crate has the series'
/// patch that drops a `PollCondVar` that nothing polls without a grace
/// period, and so the one before it, which adds
/// `CondVar::wait_interruptible_until`.
#[cfg(umad_rs_poll_unpolled_drop)]
pub(crate) use kernel::sync::poll::{PollCondVar, PollTable};
/// The same, of the module's own, before.
#[cfg(not(umad_rs_poll_unpolled_drop))]
pub(crate) use poll::{PollCondVar, PollTable};

/// `kernel::sync::poll`'s `PollCondVar` and `PollTable` in the shape the
/// series gives them, for kernels whose crate lacks that shape: none has
/// a lock-free wait on a `CondVar`, or a `PollCondVar` whose drop skips
/// the grace period when nothing polls it (which a file's data, dropped
/// after the file's release, never has), and 6.12 has no `sync::poll`. A
/// module cannot add the wait to the crate's, whose wait queue head is
/// private to the crate.
#[cfg(not(umad_rs_poll_unpolled_drop))]
mod poll {
    use super::super::bindings;
    use super::File;
    use core::marker::PhantomData;
    use kernel::{
        prelude::*,
        str::CStr,
        sync::LockClassKey,
        task::{TASK_INTERRUPTIBLE, TASK_NORMAL},
        types::Opaque,
    };

    /// What `static_lock_class!()` gives: a pinned key where the crate
    /// pins it.
    #[cfg(umad_rs_pinned_lock_class)]
    type LockClass = Pin<&'static LockClassKey>;
    /// What `static_lock_class!()` gives.
    #[cfg(not(umad_rs_pinned_lock_class))]
    type LockClass = &'static LockClassKey;

    /// The `poll_table` of a `poll` call.
    ///
    /// # Invariants
    ///
    /// `table` is null or a valid `poll_table` for `'a`.
    pub(crate) struct PollTable<'a> {
        table: *mut bindings::poll_table_struct,
        _lifetime: PhantomData<&'a bindings::poll_table_struct>,
    }

    impl PollTable<'_> {
        /// # Safety
        ///
        /// `table` is null or a valid `poll_table` for the lifetime.
        pub(crate) unsafe fn from_raw(table: *mut bindings::poll_table_struct) -> Self {
            // INVARIANT: the caller's promise.
            Self {
                table,
                _lifetime: PhantomData,
            }
        }

        /// Registers `file`'s `poll` call with `cv` (`poll_wait`).
        ///
        /// # Safety
        ///
        /// `cv` is not dropped before the last release of `file`, whose
        /// `->poll` this is: epoll's entries leave before that release,
        /// select's and poll's when their call returns.
        pub(crate) unsafe fn register_wait(&self, file: &File, cv: &PollCondVar) {
            #[cfg(umad_rs_poll_wait)]
            // SAFETY: `file` is valid for the call and `self.table` null or
            // valid (the type's invariant). The caller keeps `cv` until the
            // file's release, before which epoll takes its entries off, and
            // select and poll hold the file until they take theirs off; `cv`
            // is pinned, and its drop takes whatever is left off with
            // `POLLFREE`, waiting for a grace period if it found any.
            unsafe {
                kernel::bindings::poll_wait(
                    file.as_ptr().cast(),
                    cv.wait_queue_head.get().cast(),
                    self.table.cast(),
                )
            };
            #[cfg(not(umad_rs_poll_wait))]
            // SAFETY: as above.
            unsafe {
                bindings::poll_wait(file.as_ptr(), cv.wait_queue_head.get(), self.table)
            };
        }
    }

    /// A `struct wait_queue_head` that a [`PollTable`] registers with and
    /// that tasks wait on with or without a lock. It has the `CondVar`
    /// methods the driver calls.
    ///
    /// # Invariants
    ///
    /// `wait_queue_head` is initialised.
    #[pin_data(PinnedDrop)]
    pub(crate) struct PollCondVar {
        #[pin]
        wait_queue_head: Opaque<bindings::wait_queue_head>,
    }

    // SAFETY: a wait queue is meant to be used from any task; it has its
    // own lock.
    unsafe impl Send for PollCondVar {}
    // SAFETY: as above.
    unsafe impl Sync for PollCondVar {}

    impl PollCondVar {
        /// An empty queue whose lock is named `name`, in the lock class
        /// `key`.
        pub(crate) fn new(name: &'static CStr, key: LockClass) -> impl PinInit<Self> {
            // INVARIANT: initialised in place.
            pin_init!(Self {
                // SAFETY: `__init_waitqueue_head` initialises the pinned
                // slot; `name` and `key` are 'static, and `LockClassKey` is
                // a transparent `lock_class_key`.
                wait_queue_head <- Opaque::ffi_init(|slot| unsafe {
                    bindings::__init_waitqueue_head(
                        slot,
                        name.as_char_ptr(),
                        core::ptr::from_ref::<LockClassKey>(&*key).cast_mut().cast(),
                    )
                }),
            })
        }

        /// Waits, holding no lock, until `condition` holds or a signal
        /// arrives (`ERESTARTSYS`): `wait_event_interruptible`.
        /// `condition` runs in an interruptible sleep state and must not
        /// sleep.
        pub(crate) fn wait_interruptible_until(
            &self,
            mut condition: impl FnMut() -> bool,
        ) -> Result {
            // 6.12's crate has no `might_sleep`; it is a debugging check.
            #[cfg(umad_rs_might_sleep)]
            kernel::task::might_sleep();
            if condition() {
                return Ok(());
            }
            let wait = Opaque::<bindings::wait_queue_entry>::uninit();
            let queue = self.wait_queue_head.get();
            // SAFETY: `wait` is valid and stays on this frame, unmoved,
            // until `finish_wait` has taken it off the queue.
            unsafe { bindings::init_wait_entry(wait.get(), 0) };
            let result = loop {
                // SAFETY: the queue is initialised and `wait` valid; this
                // queues `wait` and sets the task's state before the
                // condition is checked, so a wake-up between the two is
                // not lost.
                let interrupted = unsafe {
                    bindings::prepare_to_wait_event(queue, wait.get(), TASK_INTERRUPTIBLE)
                };
                if condition() {
                    break Ok(());
                }
                if interrupted != 0 {
                    break Err(ERESTARTSYS);
                }
                // SAFETY: a plain sleep until woken; no lock is held.
                unsafe { bindings::schedule() };
            };
            // SAFETY: as for `prepare_to_wait_event`.
            unsafe { bindings::finish_wait(queue, wait.get()) };
            result
        }

        /// Wakes every waiter and every registered poll.
        pub(crate) fn notify_all(&self) {
            // SAFETY: the queue is initialised.
            unsafe {
                bindings::__wake_up(
                    self.wait_queue_head.get(),
                    TASK_NORMAL,
                    0,
                    core::ptr::null_mut(),
                )
            };
        }
    }

    #[pinned_drop]
    impl PinnedDrop for PollCondVar {
        fn drop(self: Pin<&mut Self>) {
            let queue = self.wait_queue_head.get();
            // Nothing registers with the queue any more: nothing else
            // borrows it, and whatever made this the only reference made
            // every earlier registration visible here. A poll still
            // registered keeps this true (a stale true costs only a grace
            // period); one that took itself off did so under the queue's
            // lock, which `__wake_up_pollfree` takes next, so it is done
            // with the queue once that returns.
            #[cfg(umad_rs_waitqueue_active)]
            // SAFETY: the queue is initialised (the type's invariant).
            let polled = unsafe { kernel::bindings::waitqueue_active(queue.cast()) } != 0;
            #[cfg(not(umad_rs_waitqueue_active))]
            // SAFETY: as above.
            let polled = unsafe { bindings::waitqueue_active(queue) } != 0;
            // SAFETY: the queue is initialised. This takes every poll
            // registration off it.
            unsafe { bindings::__wake_up_pollfree(queue) };
            if polled {
                // Epoll may still look at the queue under `rcu_read_lock`
                // after `POLLFREE` took its entry off.
                // SAFETY: a plain sleep; no lock is held.
                unsafe { bindings::synchronize_rcu() };
            }
        }
    }
}

/// `O_NONBLOCK`, as the crate names it where it has `kernel::fs`.
#[cfg(umad_rs_iov)]
const O_NONBLOCK: u32 = kernel::fs::file::flags::O_NONBLOCK;
/// `O_NONBLOCK`.
#[cfg(not(umad_rs_iov))]
const O_NONBLOCK: u32 = super::bindings::O_NONBLOCK;

/// Whether `file` was opened with `O_NONBLOCK`.
pub(crate) fn file_is_nonblocking(file: &File) -> bool {
    file.flags() & O_NONBLOCK != 0
}

/// Whether the file of a read or write was opened with `O_NONBLOCK`: by
/// `Kiocb::file_flags`, where the crate has the series' patch that adds
/// it, read from the kiocb as it does before.
pub(crate) fn is_nonblocking<T: kernel::types::ForeignOwnable>(kiocb: &Kiocb<'_, T>) -> bool {
    #[cfg(umad_rs_kiocb_file_flags)]
    let flags = kiocb.file_flags();
    #[cfg(not(umad_rs_kiocb_file_flags))]
    let flags = {
        let raw = kiocb.as_raw();
        // SAFETY: the kiocb and its file are valid while it is borrowed;
        // `fcntl(F_SETFL)` may write `f_flags` meanwhile, so it is read
        // once, as `File::flags` reads it.
        unsafe { core::ptr::addr_of!((*(*raw).ki_filp).f_flags).read_volatile() }
    };
    flags & O_NONBLOCK != 0
}

/// `WARN_ON(true)` here: the `kernel` crate's `warn_on!` where it has one,
/// which records the caller's file and line in the bug table; the module's
/// `WARN_ON` helper before, which names `helpers/fallback.c`.
#[cfg(not(umad_rs_warn_on_once))]
macro_rules! warn_here {
    () => {{
        #[cfg(umad_rs_warn_on)]
        kernel::warn_on!(true);
        #[cfg(not(umad_rs_warn_on))]
        $crate::glue::compat::helper_warn();
    }};
}
#[cfg(not(umad_rs_warn_on_once))]
pub(crate) use warn_here;

/// `WARN_ON(true)` through the module's helper.
#[cfg(not(umad_rs_warn_on))]
#[inline(never)]
#[cold]
pub(crate) fn helper_warn() {
    // SAFETY: `WARN_ON` only logs and taints.
    unsafe { super::bindings::WARN_ON(true) };
}

/// `WARN_ON_ONCE(cond)`: warns the first time `cond` holds at this place,
/// and returns `cond`. The `kernel` crate's `warn_on_once!` where it has
/// one; before, a flag of the module's own beside `warn_here!`.
#[cfg(umad_rs_warn_on_once)]
pub(crate) use kernel::warn_on_once;

/// `WARN_ON_ONCE(cond)`, with a flag of the module's own.
#[cfg(not(umad_rs_warn_on_once))]
macro_rules! warn_on_once {
    ($cond:expr) => {{
        use core::sync::atomic::{AtomicBool, Ordering};
        static WARNED: AtomicBool = AtomicBool::new(false);
        let cond: bool = $cond;
        if cond && !WARNED.swap(true, Ordering::Relaxed) {
            $crate::glue::compat::warn_here!();
        }
        cond
    }};
}
#[cfg(not(umad_rs_warn_on_once))]
pub(crate) use warn_on_once;

/// A pool of ids, the lowest free one first (the IDA's `ida_alloc`):
/// `kernel::id_pool::IdPool` where the crate has it.
#[cfg(umad_rs_id_pool)]
pub(crate) use kernel::id_pool::IdPool;

/// The part of `kernel::id_pool::IdPool` the driver uses, for a crate
/// without it: a fixed bitmap of at most the devnums' count, its only use.
#[cfg(not(umad_rs_id_pool))]
pub(crate) struct IdPool {
    map: kernel::alloc::KBox<[u64; IdPool::WORDS]>,
    len: usize,
}

#[cfg(not(umad_rs_id_pool))]
impl IdPool {
    const WORDS: usize = crate::rules::numbering::MAX_PORTS as usize / 64;

    /// A pool of `num_ids` ids, none taken.
    pub(crate) fn with_capacity(
        num_ids: usize,
        flags: kernel::alloc::Flags,
    ) -> Result<Self, kernel::alloc::AllocError> {
        if num_ids > 64 * Self::WORDS {
            return Err(kernel::alloc::AllocError);
        }
        Ok(Self {
            map: kernel::alloc::KBox::new([0; Self::WORDS], flags)?,
            len: num_ids,
        })
    }

    /// The lowest id at or above `offset` that is not taken.
    #[must_use]
    pub(crate) fn find_unused_id(&mut self, offset: usize) -> Option<UnusedId<'_>> {
        let id = (offset..self.len).find(|&id| self.map[id / 64] & (1 << (id % 64)) == 0)?;
        Some(UnusedId { id, pool: self })
    }

    /// Gives `id` back.
    pub(crate) fn release_id(&mut self, id: usize) {
        if let Some(word) = self.map.get_mut(id / 64) {
            *word &= !(1 << (id % 64));
        }
    }
}

/// An id of an [`IdPool`] that is not taken yet.
#[cfg(not(umad_rs_id_pool))]
pub(crate) struct UnusedId<'pool> {
    id: usize,
    pool: &'pool mut IdPool,
}

#[cfg(not(umad_rs_id_pool))]
impl UnusedId<'_> {
    /// The id, not taken yet.
    #[must_use]
    pub(crate) fn as_u32(&self) -> u32 {
        // CAST: below `64 * IdPool::WORDS`, the devnums' count.
        #[allow(clippy::cast_possible_truncation)]
        let id = self.id as u32;
        id
    }

    /// Takes the id.
    pub(crate) fn acquire(self) -> usize {
        if let Some(word) = self.pool.map.get_mut(self.id / 64) {
            *word |= 1 << (self.id % 64);
        }
        self.id
    }
}

/// A counted reference (`ARef`), which 7.x keeps in `kernel::sync::aref`
/// and 6.12 in `kernel::types`.
#[cfg(umad_rs_sync_aref)]
pub(crate) use kernel::sync::aref::ARef;
#[cfg(not(umad_rs_sync_aref))]
pub(crate) use kernel::types::ARef;

/// `dev_notice!` and `dev_warn!`: a message about a device, prefixed as
/// the driver core prefixes it. The `kernel` crate's where it has them.
#[cfg(umad_rs_dev_printk)]
pub(crate) use kernel::{dev_notice, dev_warn};

/// `dev_notice!`, over `_dev_notice`.
#[cfg(not(umad_rs_dev_printk))]
macro_rules! dev_notice {
    ($dev:expr, $($f:tt)*) => {
        $crate::glue::compat::dev_printk(
            $crate::glue::compat::DevLevel::Notice,
            $dev,
            format_args!($($f)*),
        )
    };
}
#[cfg(not(umad_rs_dev_printk))]
pub(crate) use dev_notice;

/// `dev_warn!`, over `_dev_warn`.
#[cfg(not(umad_rs_dev_printk))]
macro_rules! dev_warn {
    ($dev:expr, $($f:tt)*) => {
        $crate::glue::compat::dev_printk(
            $crate::glue::compat::DevLevel::Warn,
            $dev,
            format_args!($($f)*),
        )
    };
}
#[cfg(not(umad_rs_dev_printk))]
pub(crate) use dev_warn;

/// The levels [`dev_printk`] prints at.
#[cfg(not(umad_rs_dev_printk))]
pub(crate) enum DevLevel {
    Notice,
    Warn,
}

/// Prints `message` about `dev` at `level` (`_dev_notice`, `_dev_warn`), as
/// 7.x's `Device::pr_*` do.
#[cfg(not(umad_rs_dev_printk))]
pub(crate) fn dev_printk(
    level: DevLevel,
    dev: &kernel::device::Device,
    message: fmt::Arguments<'_>,
) {
    let printk = match level {
        DevLevel::Notice => super::bindings::_dev_notice,
        DevLevel::Warn => super::bindings::_dev_warn,
    };
    let message: *const fmt::Arguments<'_> = &message;
    // `Device` is transparent over a `struct device`.
    let dev: *const kernel::device::Device = dev;
    // SAFETY: `dev` is a valid device, whose name lives as long as it;
    // `%pA` formats the `fmt::Arguments` it is passed, as the kernel's
    // `pr_*` macros do.
    unsafe {
        printk(
            dev.cast(),
            kernel::c_str!("%pA").as_char_ptr(),
            message.cast::<core::ffi::c_void>(),
        )
    };
}

/// A copy of the calling task's name: `Task::comm` where the `kernel`
/// crate has it, the module's copy before.
#[cfg(umad_rs_task_comm)]
pub(crate) fn current_comm() -> kernel::task::TaskComm {
    kernel::current!().comm()
}

/// A copy of the calling task's name (`get_task_comm`): another thread of
/// its process may rename it at any time (`/proc/<pid>/task/<tid>/comm`),
/// writing the task's array while it is read.
#[cfg(not(umad_rs_task_comm))]
pub(crate) fn current_comm() -> TaskComm {
    let mut comm = [0; COMM_LEN];
    // SAFETY: `comm` is valid for writes of `TASK_COMM_LEN` bytes;
    // `get_task_comm` fills it from the calling task, which lives while it
    // runs.
    unsafe { super::bindings::get_task_comm(&mut comm, kernel::bindings::get_current().cast()) };
    TaskComm(comm.map(|c: kernel::ffi::c_char| c.to_ne_bytes()[0]))
}

/// A copy of a task's name, as `Task::comm` makes it.
#[cfg(not(umad_rs_task_comm))]
pub(crate) struct TaskComm([u8; COMM_LEN]);

/// `TASK_COMM_LEN`.
#[cfg(not(umad_rs_task_comm))]
// CAST: 16, in any `usize`.
#[allow(clippy::cast_possible_truncation)]
const COMM_LEN: usize = super::bindings::TASK_COMM_LEN as usize;

#[cfg(not(umad_rs_task_comm))]
impl TaskComm {
    pub(crate) fn as_c_str(&self) -> &CStr {
        cstr_until_nul(&self.0)
    }
}

/// The `u32` at the user address `addr`, read in one access (`get_user`);
/// `EFAULT` where the memory is not the caller's. The `kernel` crate's
/// `UserPtr::get` where it has one, the module's helper before.
pub(crate) fn get_user_u32(addr: usize) -> Result<u32, Error> {
    #[cfg(umad_rs_user_ptr_get)]
    let value = kernel::uaccess::UserPtr::from_addr(addr).get::<u32>();
    #[cfg(not(umad_rs_user_ptr_get))]
    let value = {
        let mut value = 0;
        // SAFETY: `value` is writable; `get_user` checks the user address.
        let ret = unsafe { super::bindings::get_user_u32(&mut value, user_u32(addr)) };
        if ret == 0 {
            Ok(value)
        } else {
            Err(kernel::error::code::EFAULT)
        }
    };
    value
}

/// Writes `value` at the user address `addr` in one access (`put_user`),
/// all of it or nothing; `EFAULT` where the memory is not the caller's.
/// The `kernel` crate's `UserPtr::put` where it has one, the module's
/// helper before.
pub(crate) fn put_user_u32(addr: usize, value: u32) -> Result<(), Error> {
    #[cfg(umad_rs_user_ptr_get)]
    let result = kernel::uaccess::UserPtr::from_addr(addr).put(value);
    #[cfg(not(umad_rs_user_ptr_get))]
    let result = {
        // SAFETY: `put_user` checks the user address.
        let ret = unsafe { super::bindings::put_user_u32(value, user_u32(addr)) };
        if ret == 0 {
            Ok(())
        } else {
            Err(kernel::error::code::EFAULT)
        }
    };
    result
}

/// The user address `addr` as the C helpers take it.
#[cfg(not(umad_rs_user_ptr_get))]
fn user_u32(addr: usize) -> *mut u32 {
    // CAST: a user address, which only the C helpers dereference, after
    // checking it.
    addr as *mut u32
}

/// `module!` with one author, who goes under `authors` (a list) where the
/// kernel's macro has that key, under `author` before. The keys keep the
/// order both macros demand.
#[cfg(umad_rs_module_authors)]
macro_rules! module_by {
    (type: $type:ident, name: $name:tt, author: $author:tt, $($rest:tt)*) => {
        kernel::prelude::module! { type: $type, name: $name, authors: [$author], $($rest)* }
    };
}
#[cfg(not(umad_rs_module_authors))]
macro_rules! module_by {
    (type: $type:ident, name: $name:tt, author: $author:tt, $($rest:tt)*) => {
        kernel::prelude::module! { type: $type, name: $name, author: $author, $($rest)* }
    };
}
pub(crate) use module_by;

/// This module's `ThisModule`, in a constant: the `ModuleMetadata`
/// constant of the module's type where `module!` makes one, the
/// `THIS_MODULE` static it made before.
#[cfg(umad_rs_this_module_const)]
macro_rules! this_module {
    () => {
        &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE
    };
}
#[cfg(not(umad_rs_this_module_const))]
macro_rules! this_module {
    () => {
        &crate::THIS_MODULE
    };
}
pub(crate) use this_module;

/// The C string that starts `bytes`, up to its first NUL; empty without
/// one (core's `CStr::from_bytes_until_nul` where `CStr` is core's; the
/// kernel's own has no such constructor).
#[cfg(not(umad_rs_task_comm))]
pub(crate) fn cstr_until_nul(bytes: &[u8]) -> &CStr {
    #[cfg(umad_rs_core_cstr)]
    let found = CStr::from_bytes_until_nul(bytes).ok();
    #[cfg(not(umad_rs_core_cstr))]
    let found = bytes
        .iter()
        .position(|&b| b == 0)
        .and_then(|len| CStr::from_bytes_with_nul(bytes.get(..=len)?).ok());
    found.unwrap_or(kernel::c_str!(""))
}

/// A `CStr` for `core::fmt` (`format_args!`): where the kernel has its own
/// `Display` (which its `CStr` implements, escaping as `BStr` does), through
/// that; before, `CStr` implements core's.
pub(crate) struct DisplayCStr<'a>(pub(crate) &'a CStr);

impl fmt::Display for DisplayCStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(umad_rs_kernel_display)]
        let result = kernel::fmt::Display::fmt(self.0, f);
        #[cfg(not(umad_rs_kernel_display))]
        let result = fmt::Display::fmt(self.0, f);
        result
    }
}

/// `impl ListItem<0> for $item`, linked through its `ListLinks` field
/// `$field` (with its `HasListLinks`): 7.x's `impl_list_item!` names the
/// field itself, 6.12's takes it from a separate `impl_has_list_links!`.
macro_rules! impl_list_item {
    ($item:ident { $field:ident }) => {
        #[cfg(umad_rs_list_item_field)]
        kernel::list::impl_list_item! {
            impl ListItem<0> for $item { using ListLinks { self.$field }; }
        }
        #[cfg(not(umad_rs_list_item_field))]
        kernel::list::impl_has_list_links! {
            impl HasListLinks<0> for $item { self.$field }
        }
        #[cfg(not(umad_rs_list_item_field))]
        kernel::list::impl_list_item! {
            impl ListItem<0> for $item { using ListLinks; }
        }
    };
}
pub(crate) use impl_list_item;
