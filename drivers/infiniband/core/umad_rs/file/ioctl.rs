// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The umad ioctls: REGISTER_AGENT (64- and 32-bit callers),
//! REGISTER_AGENT2, UNREGISTER_AGENT and ENABLE_PKEY. The checks, their
//! order and their errnos are ib_umad's.

use super::{Retired, UmadFile};
use crate::{
    glue::{
        compat::{
            current_comm, dev_notice, dev_warn, get_user_u32, put_user_u32, user_slice, DisplayCStr,
        },
        nospec::array_index_nospec,
        ratelimit::RateLimit,
    },
    infiniband::mad::{Agent, QpType, RegRequest},
    rules::{
        slots::{SlotId, MAX_AGENTS},
        uapi::{self, HdrLayout, RegReq, RegReq2, IOCTL_MAGIC},
    },
};
use core::{fmt, mem::offset_of, sync::atomic::Ordering};
use kernel::{
    ioctl::{_IO, _IOW, _IOWR},
    prelude::*,
    str::CStr,
    sync::ArcBorrow,
};

/// `IB_USER_MAD_REGISTER_AGENT`.
const REGISTER_AGENT: u32 = _IOWR::<RegReq>(IOCTL_MAGIC, 1);
/// `IB_USER_MAD_UNREGISTER_AGENT`.
const UNREGISTER_AGENT: u32 = _IOW::<u32>(IOCTL_MAGIC, 2);
/// `IB_USER_MAD_ENABLE_PKEY`.
const ENABLE_PKEY: u32 = _IO(IOCTL_MAGIC, 3);
/// `IB_USER_MAD_REGISTER_AGENT2`.
const REGISTER_AGENT2: u32 = _IOWR::<RegReq2>(IOCTL_MAGIC, 4);

/// Where a rate limit is, for the kernel's count of the messages it held
/// back: `<module path>:<line>`.
macro_rules! ratelimit_site {
    () => {
        kernel::c_str!(concat!(module_path!(), ":", line!()))
    };
}

/// Logs a register ioctl's refusal about `$file`'s `umadN`, as ib_umad's
/// `dev_notice`, but rate-limited at each place (`dev_notice_ratelimited`):
/// a program provokes these at will. The
/// generic `register` has one place for both ioctls.
macro_rules! notice {
    ($file:expr, $($arg:tt)*) => {{
        static LIMIT: RateLimit = RateLimit::new();
        if LIMIT.allow(ratelimit_site!()) {
            dev_notice!($file.node.device(), $($arg)*);
        }
    }};
}

/// A process's name as C's `%s` prints it: its bytes as they are. A name
/// is whatever bytes its process set; those that are not UTF-8, which a
/// Rust message cannot carry, are shown escaped.
struct ProcessName<'a>(&'a CStr);

impl fmt::Display for ProcessName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.to_str() {
            Ok(name) => f.write_str(name),
            Err(_) => fmt::Display::fmt(&DisplayCStr(self.0), f),
        }
    }
}

/// A register ioctl's request, as far as the checks go. Each ioctl has its
/// own `register`, so the MAD layer's request is built once, where it is
/// passed, with no merge of the two layouts in between.
trait AgentRequest: Sized {
    /// ib_umad's name for the ioctl's handler, which its messages start with.
    const NAME: &'static str;
    /// Whether the ioctl fixes the file's header layout at 64 bytes.
    const NEW_LAYOUT: bool;

    /// The request at `arg`; `compat` from a 32-bit process.
    fn read(arg: usize, compat: bool) -> Result<Self>;
    /// The QP: 0 (SMI) or 1 (GSI); any other is refused.
    fn qpn(&self) -> u32;
    /// The registration flags (`IB_USER_MAD_USER_RMPP`); REGISTER_AGENT
    /// has none.
    fn flags(&self) -> u32;
    /// The RMPP version the agent asks of the MAD layer; 0 for none.
    fn rmpp_version(&self) -> u8;
    /// What to receive unsolicited: nothing (a send-only agent), or a
    /// class's MADs; `Err` with an OUI that does not fit in 24 bits.
    fn request(&self) -> Option<core::result::Result<RegRequest, u32>>;

    /// Flags the ioctl does not know.
    fn unknown_flags(&self) -> u32 {
        0
    }
}

/// The `N` bytes of a register request at `arg`.
fn request_bytes<const N: usize>(arg: usize) -> Result<[u8; N]> {
    user_slice(arg, N).reader().read()
}

/// REGISTER_AGENT's request, and whether the caller is a 32-bit process.
struct RegisterV1 {
    req: RegReq,
    compat: bool,
}

impl AgentRequest for RegisterV1 {
    const NAME: &'static str = "ib_umad_reg_agent";
    const NEW_LAYOUT: bool = false;

    fn read(arg: usize, compat: bool) -> Result<Self> {
        Ok(Self {
            req: RegReq::from_bytes(&request_bytes(arg)?),
            compat,
        })
    }

    fn qpn(&self) -> u32 {
        self.req.qpn.into()
    }

    fn flags(&self) -> u32 {
        0
    }

    fn rmpp_version(&self) -> u8 {
        self.req.rmpp_version
    }

    fn request(&self) -> Option<core::result::Result<RegRequest, u32>> {
        let req = &self.req;
        (req.mgmt_class != 0).then(|| {
            Ok(RegRequest::new(
                req.mgmt_class,
                req.mgmt_class_version,
                req.oui,
                req.method_mask(self.compat),
            ))
        })
    }
}

impl AgentRequest for RegReq2 {
    const NAME: &'static str = "ib_umad_reg_agent2";
    const NEW_LAYOUT: bool = true;

    fn read(arg: usize, _compat: bool) -> Result<Self> {
        Ok(RegReq2::from_bytes(&request_bytes(arg)?))
    }

    fn qpn(&self) -> u32 {
        self.qpn
    }

    fn flags(&self) -> u32 {
        self.flags
    }

    fn rmpp_version(&self) -> u8 {
        self.rmpp_version
    }

    fn request(&self) -> Option<core::result::Result<RegRequest, u32>> {
        (self.mgmt_class != 0).then(|| {
            let oui = self.oui_bytes().ok_or(self.oui)?;
            Ok(RegRequest::new(
                self.mgmt_class,
                self.mgmt_class_version,
                oui,
                self.method_mask,
            ))
        })
    }

    fn unknown_flags(&self) -> u32 {
        RegReq2::unknown_flags(self)
    }
}

impl UmadFile {
    /// The umad ioctls; unknown ones are `ENOIOCTLCMD` (`ENOTTY`).
    pub(crate) fn ioctl(
        this: ArcBorrow<'_, Self>,
        cmd: u32,
        arg: usize,
        compat: bool,
    ) -> Result<isize> {
        match cmd {
            REGISTER_AGENT => Self::register::<RegisterV1>(this, arg, compat),
            REGISTER_AGENT2 => Self::register::<RegReq2>(this, arg, compat),
            UNREGISTER_AGENT => this.unregister(arg),
            ENABLE_PKEY => this.enable_pkey(),
            _ => Err(ENOIOCTLCMD),
        }
        .map(|()| 0)
    }

    /// REGISTER_AGENT and REGISTER_AGENT2: a new agent in the lowest free
    /// slot, whose number goes back in the request's `id`. The checks and
    /// their order are ib_umad's.
    fn register<R: AgentRequest>(this: ArcBorrow<'_, Self>, arg: usize, compat: bool) -> Result {
        let port_state = this.port().state.lock();
        let mut state = this.state.lock();
        let Some(device) = port_state.device() else {
            notice!(this, "{}: invalid device\n", R::NAME);
            return Err(EPIPE);
        };
        let req = R::read(arg, compat)?;
        if req.qpn() > 1 {
            notice!(this, "{}: invalid QPN {} specified\n", R::NAME, req.qpn());
            return Err(EINVAL);
        }
        if req.unknown_flags() != 0 {
            notice!(
                this,
                "{} failed: invalid registration flags specified {:#x}; supported {:#x}\n",
                R::NAME,
                req.flags(),
                uapi::REG_FLAGS_CAP
            );
            // Tell the caller what is supported.
            put_user_u32(
                arg.wrapping_add(offset_of!(RegReq2, flags)),
                uapi::REG_FLAGS_CAP,
            )?;
            return Err(EINVAL);
        }
        let Some(slot) = state.agents.vacant()? else {
            notice!(this, "{}: Max Agents ({MAX_AGENTS}) reached\n", R::NAME);
            return Err(ENOMEM);
        };
        let request = req.request();
        let request = match request {
            None => None,
            Some(Err(oui)) => {
                notice!(this, "{} failed: oui invalid {oui:#010x}\n", R::NAME);
                return Err(EINVAL);
            }
            Some(Ok(ref request)) => Some(request),
        };
        let qp = if req.qpn() == 0 {
            QpType::Smi
        } else {
            QpType::Gsi
        };
        // The agent holds the file, its handler, and goes into the file's
        // slots: it leaves them only as a `Retired`, unregistered, by
        // UNREGISTER_AGENT, the port's `kill` or, at the latest, `close`,
        // which the file's release runs, so the file does not keep itself.
        let agent = Agent::register(
            device,
            this.port().number,
            qp,
            request,
            req.rmpp_version(),
            req.flags(),
            this.into(),
        )?;
        if let Err(e) = put_user_u32(arg, slot.id()) {
            Retired::new(agent, state).unregister(&port_state);
            return Err(e);
        }
        slot.put(agent);
        if !state.already_used {
            state.already_used = true;
            if R::NEW_LAYOUT {
                this.new_layout.store(true, Ordering::Relaxed);
            } else if this.layout() == HdrLayout::Old {
                this.warn_old_abi();
            }
        }
        Ok(())
    }

    /// ib_umad's warning for a process that registers an agent with the
    /// old header: it cannot see P_Key indexes. A program provokes it with
    /// every file it opens, so it is rate-limited as the notices are.
    fn warn_old_abi(&self) {
        static LIMIT: RateLimit = RateLimit::new();
        if !LIMIT.allow(ratelimit_site!()) {
            return;
        }
        // `ProcessName` is `core::fmt::Display`, which `dev_warn!` takes
        // through `fmt::Arguments`.
        dev_warn!(
            self.node.device(),
            "process {} did not enable P_Key index support.\n",
            format_args!("{}", ProcessName(current_comm().as_c_str()))
        );
        dev_warn!(
            self.node.device(),
            "   Documentation/infiniband/user_mad.rst has info on the new ABI.\n"
        );
    }

    /// UNREGISTER_AGENT.
    fn unregister(&self, arg: usize) -> Result {
        let id = get_user_u32(arg)?;
        let id = SlotId::new(id, array_index_nospec).ok_or(EINVAL)?;
        let port_state = self.port().state.lock();
        let mut state = self.state.lock();
        let agent = state.agents.take(id).ok_or(EINVAL)?;
        Retired::new(agent, state).unregister(&port_state);
        Ok(())
    }

    /// ENABLE_PKEY: the 64-byte header, unless an agent fixed the layout.
    /// Out of line: a file calls it once, and inlined it would cost every
    /// other ioctl saved registers.
    #[inline(never)]
    fn enable_pkey(&self) -> Result {
        let state = self.state.lock();
        if state.already_used {
            return Err(EINVAL);
        }
        self.new_layout.store(true, Ordering::Relaxed);
        drop(state);
        Ok(())
    }
}
