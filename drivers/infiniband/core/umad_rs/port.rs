// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! MAD ports and their nodes: `umadN` for every port with MADs, `issmN`
//! where the port has an SMI, both numbered N from one devnum.
//!
//! A [`Port`] is reference counted: the IB client holds it from `add` to
//! `remove` (an [`AddedPort`]), and each of its nodes holds it until the
//! node's device is released, which an open file of the node delays until
//! it is closed. Removal revokes the IB device (the `device` in
//! [`PortState`] becomes `None`) under the port's lock, so no file
//! operation can reach the device after its `remove`. The sysfs shows of
//! `ibdev` print the port's copy of the device's name, not the device's.

use crate::{
    file::UmadFile,
    glue::{
        chrdev::{
            attributes::{Page, Shown},
            file::{FileData, FileOperations, FileOps},
            ClassRegistration, Devt, Node, NodeInfo, NodeRegistration,
        },
        compat::{
            self, this_module, File, IdPool, IovIterDest, IovIterSource, Kiocb, MutexGuard,
            PollTable,
        },
        trace,
    },
    infiniband::{self, DeviceHandle, DeviceName, PortCapabilities},
    rules::numbering::{DevNumber, Regions},
};
use kernel::{
    list::{List, ListArc},
    new_condvar, new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, CondVar, Mutex, SpinLock},
};

/// The port's lock, held: what may drop agents (see `file.rs`).
pub(crate) type PortGuard<'a> = MutexGuard<'a, PortState>;

impl From<DevNumber> for Devt {
    fn from(number: DevNumber) -> Self {
        Devt::new(number.major, number.minor)
    }
}

/// What the umad client shares between devices.
pub(crate) struct UmadContext {
    pub(crate) class: ClassRegistration<Port>,
    pub(crate) regions: Regions,
    /// The ports' devnums, `MAX_PORTS` of them (ib_umad's `umad_ida`),
    /// which each port's hold shares to give its own back.
    pub(crate) devnums: Arc<Mutex<IdPool>>,
}

/// One MAD-capable port of an IB device.
#[pin_data]
pub(crate) struct Port {
    /// N of umadN and issmN.
    pub(crate) devnum: u32,
    /// The port's number on its IB device.
    pub(crate) number: u32,
    /// The IB device's index, for tracepoints (which must not touch the
    /// device itself: it may be gone).
    device_index: u32,
    /// Whether issmN is held: by its one opener (the IsSM holder), from
    /// the open to the release (ib_umad's `sm_sem`). See [`IssmHold`].
    #[pin]
    issm_held: Mutex<bool>,
    /// Signalled when the IsSM holder gives issmN back.
    #[pin]
    issm_free: CondVar,
    /// ib_umad's `file_mutex`.
    #[pin]
    pub(crate) state: Mutex<PortState>,
    /// The IB device's name, for the shows of the nodes' `ibdev`: a copy
    /// the umad client's `rename` renews, as the device's own array may
    /// be written while it is read. Nothing else uses it.
    #[pin]
    device_name: SpinLock<DeviceName>,
}

/// What a port's lock protects.
pub(crate) struct PortState {
    /// The IB device, until its `remove`.
    device: Option<DeviceHandle>,
    /// The open files of `umadN`, linked through themselves as ib_umad's
    /// `file_list`: `kill` reaches their agents.
    files: List<UmadFile>,
}

impl PortState {
    /// The IB device, unless it is gone.
    pub(crate) fn device(&self) -> Option<&DeviceHandle> {
        self.device.as_ref()
    }

    /// Whether the calling task may open the port: `ENXIO` once the
    /// device is gone, `EPERM` from another network namespace.
    pub(crate) fn check_open(&self) -> Result {
        match &self.device {
            None => Err(ENXIO),
            Some(device) if !device.accessible_from_current_netns() => Err(EPERM),
            Some(_) => Ok(()),
        }
    }

    pub(crate) fn add_file(&mut self, file: ListArc<UmadFile>) {
        self.files.push_back(file);
    }

    pub(crate) fn remove_file(&mut self, file: &UmadFile) {
        // SAFETY: a file is in no list but its own port's (`add_file`).
        drop(unsafe { self.files.remove(file) });
    }
}

impl Port {
    /// Makes the port and its nodes: `umadN`, and `issmN` if `smi`.
    pub(crate) fn create(
        context: &UmadContext,
        device: &infiniband::Adding<'_>,
        number: u32,
        smi: bool,
    ) -> Result<AddedPort> {
        // Held until `kill`, when the umad client drops the port.
        let handle = device.handle();
        let devnum = Devnum::take(&context.devnums)?;
        let port = Arc::pin_init(
            pin_init!(Port {
                devnum: devnum.number,
                number,
                device_index: device.index(),
                issm_held <- new_mutex!(false),
                issm_free <- new_condvar!(),
                state <- new_mutex!(PortState {
                    device: Some(handle),
                    files: List::new(),
                }),
                device_name <- new_spinlock!(device.name()),
            }),
            GFP_KERNEL,
        )?;
        // From here on, dropping `hold` takes the port away.
        let hold = PortHold {
            port,
            _devnum: devnum,
        };
        let devnum = hold.port.devnum;
        let parent = device.parent();
        let class = &context.class;
        // Each name's `format_args!` lives for its statement only (before
        // Rust 1.89), so the `NodeInfo`s are built in the calls.
        let umad = Node::add(
            hold.port.clone(),
            &UMAD_FOPS,
            NodeInfo {
                class,
                parent,
                devt: context.regions.umad(devnum).into(),
                name: format_args!("umad{devnum}"),
            },
        )?;
        let issm = smi
            .then(|| {
                Node::add(
                    hold.port.clone(),
                    &ISSM_FOPS,
                    NodeInfo {
                        class,
                        parent,
                        devt: context.regions.issm(devnum).into(),
                        name: format_args!("issm{devnum}"),
                    },
                )
            })
            .transpose()?;
        Ok(AddedPort { issm, umad, hold })
    }

    /// Takes the port away, once its nodes are gone (no new opens, sysfs
    /// readers drained): its open files' agents (waking their waiters),
    /// then its IB device (revoked under the lock, so no file operation
    /// reaches it after this).
    fn kill(&self) {
        let mut state = self.state.lock();
        for file in state.files.iter() {
            file.kill(&state);
        }
        state.device = None;
    }

    /// Where this port's tracepoint events happen.
    pub(crate) fn trace_origin(&self) -> trace::Origin {
        trace::Origin {
            device_index: self.device_index,
            port: self.number,
        }
    }

    /// The IB device was renamed to `device`'s name.
    pub(crate) fn rename(&self, device: &infiniband::Device) {
        *self.device_name.lock() = device.name();
    }

    /// Shows the IB device's name as `out`'s line (sysfs `ibdev`).
    pub(crate) fn show_ib_device_name(node: Shown<'_, Port>, out: &mut Page<'_>) {
        out.line_str(node.owner().device_name.lock().as_c_str());
    }
}

/// A port with its nodes in the system, as the umad client keeps it from
/// its `add` to its `remove`. Dropping it takes the port away as
/// `ib_umad_kill_port` does: the fields drop in declaration order, so the
/// nodes go first (no new opens, sysfs readers drained), then the port.
pub(crate) struct AddedPort {
    issm: Option<NodeRegistration<Port>>,
    umad: NodeRegistration<Port>,
    hold: PortHold,
}

impl AddedPort {
    /// The port.
    pub(crate) fn port(&self) -> &Port {
        &self.hold.port
    }

    /// umadN's node.
    pub(crate) fn umad_node(&self) -> &Node<Port> {
        self.umad.node()
    }

    /// issmN's node; `None` if the port has no SMI.
    pub(crate) fn issm_node(&self) -> Option<&Node<Port>> {
        self.issm.as_ref().map(NodeRegistration::node)
    }
}

/// The umad client's hold on a port, whose drop takes the port away
/// (`Port::kill`), then gives its devnum back (fields drop after `drop`).
struct PortHold {
    port: Arc<Port>,
    /// Held for its drop, after the kill.
    _devnum: Devnum,
}

impl Drop for PortHold {
    fn drop(&mut self) {
        self.port.kill();
    }
}

/// A devnum taken from the pool, given back on drop (ib_umad's
/// `ida_alloc_max`/`ida_free` on `umad_ida`).
struct Devnum {
    number: u32,
    pool: Arc<Mutex<IdPool>>,
}

impl Devnum {
    /// The lowest free devnum: `ENOSPC` when all are taken.
    fn take(pool: &Arc<Mutex<IdPool>>) -> Result<Self> {
        let mut ids = pool.lock();
        let id = ids.find_unused_id(0).ok_or(ENOSPC)?;
        let number = id.as_u32();
        id.acquire();
        drop(ids);
        Ok(Self {
            number,
            pool: pool.clone(),
        })
    }
}

impl Drop for Devnum {
    fn drop(&mut self) {
        self.pool.lock().release_id(self.number as usize);
    }
}

/// The files of `umadN`.
pub(crate) struct UmadFileOps;

#[vtable]
impl FileOps for UmadFileOps {
    type Owner = Port;
    type Ptr = Arc<UmadFile>;

    fn open(node: &Node<Port>, _: &File) -> Result<Arc<UmadFile>> {
        UmadFile::open(node)
    }

    fn release(file: Arc<UmadFile>, _: &File) {
        file.close();
    }

    fn read_iter(kiocb: Kiocb<'_, Arc<UmadFile>>, out: &mut IovIterDest<'_>) -> Result<usize> {
        kiocb.file().read(|| compat::is_nonblocking(&kiocb), out)
    }

    fn write_iter(kiocb: Kiocb<'_, Arc<UmadFile>>, input: &mut IovIterSource<'_>) -> Result<usize> {
        kiocb.file().write(input)
    }

    fn poll(file: FileData<'_, Self>, f: &File, table: &PollTable<'_>) -> u32 {
        file.poll(f, table)
    }

    fn ioctl(file: FileData<'_, Self>, _: &File, cmd: u32, arg: usize) -> Result<isize> {
        UmadFile::ioctl(file, cmd, arg, false)
    }

    fn compat_ioctl(file: FileData<'_, Self>, _: &File, cmd: u32, arg: usize) -> Result<isize> {
        UmadFile::ioctl(file, cmd, arg, true)
    }
}

/// The files of `issmN`: opening one makes the opener the port's IsSM
/// holder, until it closes it.
pub(crate) struct IssmFileOps;

#[vtable]
impl FileOps for IssmFileOps {
    type Owner = Port;
    type Ptr = KBox<IssmHold>;

    fn open(node: &Node<Port>, file: &File) -> Result<KBox<IssmHold>> {
        let hold = KBox::new(
            IssmHold::take(node.owner().clone(), compat::file_is_nonblocking(file))?,
            GFP_KERNEL,
        )?;
        // The device may have gone while the opener waited. An error
        // drops the hold, which gives issmN back.
        {
            let state = hold.port.state.lock();
            state.check_open()?;
            // The IsSM bit tells the subnet that an SM runs behind the
            // port, while its holder has issmN open.
            state.device().ok_or(ENXIO)?.modify_port_capabilities(
                hold.port.number,
                PortCapabilities::SM,
                PortCapabilities::NONE,
            )?;
        }
        Ok(hold)
    }

    fn release(hold: KBox<IssmHold>, _: &File) {
        if let Some(device) = &hold.port.state.lock().device {
            // Nothing to tell anyone if this fails: the file is gone.
            let _ = device.modify_port_capabilities(
                hold.port.number,
                PortCapabilities::NONE,
                PortCapabilities::SM,
            );
        }
        // Dropping `hold` gives issmN back.
    }
}

/// The hold on a port's issmN, from an open to its release: there is one
/// at a time, and dropping it gives issmN back, waking those waiting for
/// it.
pub(crate) struct IssmHold {
    port: Arc<Port>,
}

impl IssmHold {
    /// Takes issmN: at once if it is free, else `EAGAIN` if `nonblocking`,
    /// else once its holder gives it back, or `ERESTARTSYS` if a signal
    /// comes first (ib_umad's errors, whatever the wait says).
    fn take(port: Arc<Port>, nonblocking: bool) -> Result<Self> {
        let mut held = port.issm_held.lock();
        while *held {
            if nonblocking {
                return Err(EAGAIN);
            }
            if port.issm_free.wait_interruptible(&mut held) {
                return Err(ERESTARTSYS);
            }
        }
        *held = true;
        drop(held);
        Ok(Self { port })
    }
}

impl Drop for IssmHold {
    fn drop(&mut self) {
        *self.port.issm_held.lock() = false;
        // Every waiter looks again: a waiter that a signal ends as it is
        // woken takes a single wake-up with it.
        self.port.issm_free.notify_all();
    }
}

// The module owns the files: it cannot be unloaded while one is open.
static UMAD_FOPS: FileOperations<UmadFileOps> = FileOperations::new(this_module!());
static ISSM_FOPS: FileOperations<IssmFileOps> = FileOperations::new(this_module!());
