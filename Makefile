# SPDX-License-Identifier: GPL-2.0
# ib_umad_rs, out of tree.
#
#   make KDIR=<kernel build dir> [LLVM=1 ...]   build ib_umad_rs.ko
#   make install KDIR=<kernel build dir> [...]  install it (updates/, depmod)
#                                               and the modprobe.d file that
#                                               makes it the umad driver
#   make uninstall KDIR=<kernel build dir>      remove both again
#   make clean KDIR=<kernel build dir>
#   make check                                  host unit tests (cargo test)
#
# For a Debian kernel, tools/build-for-debian.sh [--install] does this with
# the tree it prepares. The test rig is driven by tools/rig/; see README.md.

KDIR ?= /lib/modules/$(shell uname -r)/build
# Where modprobe reads a package's or an administrator's configuration.
MODPROBE_D ?= /etc/modprobe.d
MODPROBE_CONF := $(DESTDIR)$(MODPROBE_D)/ib_umad_rs.conf
INSTALL_MOD_DIR ?= updates
release = $(shell $(MAKE) -s -C $(KDIR) kernelrelease)
installed = $(INSTALL_MOD_PATH)/lib/modules/$(release)/$(INSTALL_MOD_DIR)/drivers/infiniband/core/umad_rs
depmod = depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(release)

all:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# kbuild's own depmod needs System.map in the tree, which a distribution's
# headers do not have: depmod runs here.
install: all
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) modules_install
	$(depmod)
	install -D -m 644 tools/modprobe.d/ib_umad_rs.conf $(MODPROBE_CONF)

uninstall:
	rm -f $(MODPROBE_CONF)
	rm -f $(installed)/ib_umad_rs.ko*
	-rmdir -p --ignore-fail-on-non-empty $(installed)
	$(depmod)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

check:
	cargo test --quiet

.PHONY: all install uninstall clean check
