// SPDX-License-Identifier: GPL-2.0

//! The umad ioctls: REGISTER_AGENT (64- and 32-bit callers),
//! REGISTER_AGENT2, UNREGISTER_AGENT and ENABLE_PKEY. The checks, their
//! order and their errnos are ib_umad's.

use super::{Retired, UmadFile};
use crate::port::notice;
use crate::{
    glue::{
        nospec::array_index_nospec,
        uaccess::{self, UserReader},
    },
    infiniband::mad::{Agent, QpType, RegRequest},
    rules::{
        slots::MAX_AGENTS,
        uapi::{self, HdrLayout, Ioctl, RegReq, RegReq2},
    },
};
use core::{
    mem::{offset_of, size_of},
    sync::atomic::Ordering,
};
use kernel::{prelude::*, sync::ArcBorrow};

/// A register ioctl's request, as far as the checks go.
struct AgentRequest {
    qpn: u32,
    flags: u32,
    /// Flags REGISTER_AGENT2 does not know.
    unknown_flags: u32,
    rmpp_version: u8,
    /// What to receive unsolicited: nothing (a send-only agent), or a
    /// class's MADs; `Err` with an OUI that does not fit in 24 bits.
    request: Option<core::result::Result<RegRequest, u32>>,
}

impl AgentRequest {
    fn read(arg: usize, which: Register) -> Result<Self> {
        Ok(match which {
            Register::V1 { compat } => {
                let mut raw = [0; size_of::<RegReq>()];
                UserReader::new(arg, raw.len()).read_array(&mut raw)?;
                let req = RegReq::from_bytes(&raw);
                Self {
                    qpn: req.qpn.into(),
                    flags: 0,
                    unknown_flags: 0,
                    rmpp_version: req.rmpp_version,
                    request: (req.mgmt_class != 0).then(|| {
                        Ok(RegRequest::new(
                            req.mgmt_class,
                            req.mgmt_class_version,
                            req.oui,
                            req.method_mask(compat),
                        ))
                    }),
                }
            }
            Register::V2 => {
                let mut raw = [0; size_of::<RegReq2>()];
                UserReader::new(arg, raw.len()).read_array(&mut raw)?;
                let req = RegReq2::from_bytes(&raw);
                Self {
                    qpn: req.qpn,
                    flags: req.flags,
                    unknown_flags: req.unknown_flags(),
                    rmpp_version: req.rmpp_version,
                    request: (req.mgmt_class != 0).then(|| {
                        let oui = req.oui_bytes().ok_or(req.oui)?;
                        Ok(RegRequest::new(
                            req.mgmt_class,
                            req.mgmt_class_version,
                            oui,
                            req.method_mask,
                        ))
                    }),
                }
            }
        })
    }
}

/// Which register ioctl.
#[derive(Clone, Copy)]
enum Register {
    /// REGISTER_AGENT; `compat` from a 32-bit process.
    V1 { compat: bool },
    /// REGISTER_AGENT2.
    V2,
}

impl Register {
    /// ib_umad's name for the ioctl's handler, which its messages start with.
    fn name(self) -> &'static str {
        match self {
            Register::V1 { .. } => "ib_umad_reg_agent",
            Register::V2 => "ib_umad_reg_agent2",
        }
    }
}

impl UmadFile {
    /// The umad ioctls; unknown ones are `ENOIOCTLCMD` (`ENOTTY`).
    #[inline(always)]
    pub(crate) fn ioctl(
        self: ArcBorrow<'_, Self>,
        cmd: u32,
        arg: usize,
        compat: bool,
    ) -> Result<i32> {
        match Ioctl::from_cmd(cmd) {
            Some(Ioctl::RegisterAgent) => self.register(arg, Register::V1 { compat }),
            Some(Ioctl::RegisterAgent2) => self.register(arg, Register::V2),
            Some(Ioctl::UnregisterAgent) => self.unregister(arg),
            Some(Ioctl::EnablePkey) => self.enable_pkey(),
            None => Err(ENOIOCTLCMD),
        }
        .map(|()| 0)
    }

    /// REGISTER_AGENT and REGISTER_AGENT2: a new agent in the lowest free
    /// slot, whose number goes back in the request's `id`. The checks and
    /// their order are ib_umad's.
    fn register(self: ArcBorrow<'_, Self>, arg: usize, which: Register) -> Result {
        let port_state = self.port.state.lock();
        let mut state = self.state.lock();
        let Some(device) = port_state.device() else {
            notice!(self.port, "{}: invalid device\n", which.name());
            return Err(EPIPE);
        };
        let req = AgentRequest::read(arg, which)?;
        if req.qpn > 1 {
            notice!(
                self.port,
                "{}: invalid QPN {} specified\n",
                which.name(),
                req.qpn
            );
            return Err(EINVAL);
        }
        if req.unknown_flags != 0 {
            notice!(
                self.port,
                "{} failed: invalid registration flags specified {:#x}; supported {:#x}\n",
                which.name(),
                req.flags,
                uapi::REG_FLAGS_CAP
            );
            // Tell the caller what is supported.
            uaccess::put_u32(
                arg.wrapping_add(offset_of!(RegReq2, flags)),
                uapi::REG_FLAGS_CAP,
            )?;
            return Err(EINVAL);
        }
        let Some(slot) = state.agents.vacant() else {
            notice!(
                self.port,
                "{}: Max Agents ({MAX_AGENTS}) reached\n",
                which.name()
            );
            return Err(ENOMEM);
        };
        let request = match req.request {
            None => None,
            Some(Err(oui)) => {
                notice!(
                    self.port,
                    "{} failed: oui invalid {oui:#010x}\n",
                    which.name()
                );
                return Err(EINVAL);
            }
            Some(Ok(ref request)) => Some(request),
        };
        let qp = if req.qpn == 0 {
            QpType::Smi
        } else {
            QpType::Gsi
        };
        // SAFETY: the agent goes into this file's slots, which it leaves
        // only as a `Retired`, unregistered under the port's lock: by the
        // time the port's `kill` returns, hence before the device goes.
        let agent = unsafe {
            Agent::register(
                device,
                self.port.number,
                qp,
                request,
                req.rmpp_version,
                req.flags,
                self.into(),
            )
        }?;
        if let Err(e) = uaccess::put_u32(arg, slot.id()) {
            Retired::new(agent, state).unregister(&port_state);
            return Err(e);
        }
        slot.put(agent);
        if !state.already_used {
            state.already_used = true;
            match which {
                Register::V2 => self.new_layout.store(true, Ordering::Relaxed),
                Register::V1 { .. } if self.layout() == HdrLayout::Old => self.port.warn_old_abi(),
                Register::V1 { .. } => {}
            }
        }
        Ok(())
    }

    /// UNREGISTER_AGENT.
    fn unregister(&self, arg: usize) -> Result {
        let id = uaccess::get_u32(arg)?;
        if id >= MAX_AGENTS {
            return Err(EINVAL);
        }
        let port_state = self.port.state.lock();
        let mut state = self.state.lock();
        // No speculative read past the table with a wild id.
        let id = array_index_nospec(id, MAX_AGENTS);
        let agent = state.agents.take(id).ok_or(EINVAL)?;
        Retired::new(agent, state).unregister(&port_state);
        Ok(())
    }

    /// ENABLE_PKEY: the 64-byte header, unless an agent fixed the layout.
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
