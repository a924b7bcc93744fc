// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_umad_rs's tracepoints, created here; CREATE_RUST_TRACE_POINTS adds
 * the entry points the kernel crate's declare_trace! calls, where the
 * kernel has them.
 */
#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include "ib_umad_rs_trace.h"
