# SPDX-License-Identifier: GPL-2.0
# ib_umad_rs, out of tree.
#
#   make KDIR=<kernel build dir> [LLVM=1 ...]   build ib_umad_rs.ko
#   make clean KDIR=<kernel build dir>
#   make check                                  host unit tests (cargo test)
#
# The test rig (kernel, VM, selftests) is driven by tools/rig/; see README.md.

KDIR ?= /lib/modules/$(shell uname -r)/build

all:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

check:
	cargo test --quiet

.PHONY: all clean check
