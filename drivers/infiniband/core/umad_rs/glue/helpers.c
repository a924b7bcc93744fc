// SPDX-License-Identifier: GPL-2.0
/*
 * The static inline helpers ib_umad_rs calls, out of line, gathered as the
 * kernel's rust/helpers/helpers.c gathers its own: each file in helpers/
 * but fallback.c is the one of that name in rust/helpers/, where the patch
 * series puts its helpers. Each helper is the C function or macro of its
 * name and nothing more: logic belongs in the Rust module.
 */

/* Out of line: an out-of-tree module's Rust calls them by symbol. */
#define __rust_helper

#include "helpers/fallback.c"
#include "helpers/infiniband.c"
#include "helpers/kdev_t.c"
#include "helpers/nospec.c"
#include "helpers/ratelimit.c"
#include "helpers/task.c"
#include "helpers/uaccess.c"
