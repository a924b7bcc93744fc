#!/usr/bin/env bash
# Boots a test kernel in QEMU with the umad drivers, the selftests and the
# samples in an initramfs, and keeps the guest's whole serial log.
#   vm.sh <flavour> suite [c,rust]   selftests against each driver
#   vm.sh <flavour> demo             the README's main job
#   vm.sh <flavour> bench            umad_bench against each driver
#   vm.sh debian fabric              umad_fabric.sh's benchmark against each
#                                    driver (fabric-bench.sh)
#   vm.sh plain profile              the same under the host's perf
#   vm.sh plain trace                umad_bench's steps, for trace.sh
# Flavours: plain, debug, race, lean (the rig's 6.12 kernels, kernel.sh),
# debian (trixie-backports' 7.3 image and modules), its flavours rt-amd64
# (PREEMPT_RT), cloud-amd64 (no rxe: the tests' pair is ib_loopback's),
# arm64, arm64-16k (16K pages) and rt-arm64, and sid (sid's
# 7.2), each Debian's own (debian-kernel.sh; the arm64 ones in
# qemu-system-aarch64, with an arm64 userspace, guest-sysroot.sh), and
# series: the 7.3 kernel with the patch series, both drivers built in its
# tree (tools/upstream/build.sh).
# RIG_TESTS=a,b runs only those selftests (while working on them), and
# RIG_C_TESTS=a,b only those against C (series and debug have their own);
# RIG_STRESS_CYCLES=n sets umad_stress's removal cycles (the soak: 1000);
# RIG_FUZZ_OPS=n and RIG_FUZZ_SEED=s set umad_fuzz's length and seed;
# RIG_FABRICS=a,b the fabrics of umad_fabric.sh (its UMAD_FABRICS), in a
# suite and in the fabric benchmark, whose rounds RIG_BENCH_ROUNDS sets;
# RIG_TEST_TIMEOUT=s gives each test program s seconds (600);
# RIG_PROFILE_RUNS=n profiles n benchmark runs (default 8), of
# RIG_PROFILE_GROUPS (umad_bench's groups: all) on RIG_PROFILE_DEVICE (rxe,
# the default, or iblo: ib_loopback), or, with RIG_PROFILE_DEVICE=fabric,
# of umad_fabric.sh's benchmark on RIG_FABRICS; RIG_QEMU_EXTRA
# adds qemu options (e.g. "-icount shift=0,sleep=off": time counts
# instructions).
# Prints the log's path on stdout. Exit status 0 when the guest finished
# (its "@@rig verdict" line), whatever the tests said: report.py judges them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

usage="usage: vm.sh <plain|debug|race|lean|debian|rt-amd64|cloud-amd64|arm64|arm64-16k|rt-arm64|sid|rdma-rc|series> <suite|demo|bench|fabric|profile|trace> [drivers]"
flavour=${1:?$usage}
mode=${2:?$usage}
drivers=${3:-c,rust}
# Guests get RIG_CPUS vCPUs (at least 2 for the suites: the race tests need
# CPUs running at once; the benchmark's instruction clock and the tracer
# take one, and so does the lean kernel, which has no SMP), each a host
# thread of multi-threaded TCG; the guest fails a boot that brings up
# fewer.
default_cpus=2
[ "$flavour" != lean ] || default_cpus=1
RIG_CPUS=${RIG_CPUS:-$default_cpus}

# The flavours that boot one of Debian's images: debian, its flavours and
# sid, and rdma-rc, Debian's 7.3 with the IB core of its source and the
# rdma-rc series alone (tools/upstream/rdma-rc.sh), for the C ib_umad alone.
image= arch=amd64
case $flavour in
debian | rt-amd64 | cloud-amd64 | arm64 | arm64-16k | rt-arm64 | sid) image=$flavour ;;
rdma-rc) image=debian ;;
esac
# The cloud flavours have no rxe, which the demo, the benchmark and the
# tracer use; their suite runs on ib_loopback's pair.
case $image in
cloud-*) [ "$mode" = suite ] || die "$flavour has no rxe, which $mode needs" ;;
esac
if [ -n "$image" ]; then
	# Sets root, kdir, vmlinuz, modules (the image's) and arch; resolved
	# once for this boot and debian-package.sh.
	answer=RIG_DEBIAN_${image//-/_}
	declare -x "$answer=${!answer:-$(bash "$RIG_DIR/debian-kernel.sh" "$image")}"
	eval "${!answer}"
	ksft=$kdir/tools/testing/selftests
	progs=$RIG_CACHE/selftests-$image
	if [ "$flavour" = rdma-rc ]; then
		core=$(bash "$REPO_DIR/tools/upstream/rdma-rc.sh")
		ko=
	else
		core=
		# ib_umad_rs as a user gets it: the ib-umad-rs-dkms package, built
		# by Debian's dkms.
		ko=$(bash "$RIG_DIR/debian-package.sh" "$flavour")
	fi
elif [ "$flavour" = series ]; then
	# What tools/upstream/build.sh built in the trixie root: the kernel,
	# both drivers as its modules, the test modules; the harness is the
	# series tree's.
	eval "$(bash "$RIG_DIR/debian-kernel.sh" debian)"
	kdir=$root/build/upstream/out
	[ "$(cat "$kdir/.rig-series" 2>/dev/null)" = "$(git -C "$RIG_CACHE/upstream/work" rev-parse 'series^{tree}')" ] ||
		die "the series kernel is not this series': run tools/upstream/build.sh"
	vmlinuz=$kdir/arch/x86/boot/bzImage
	ksft=$RIG_CACHE/upstream/work/tools/testing/selftests
	progs=$RIG_CACHE/selftests-series
	ko=$kdir/drivers/infiniband/core/umad_rs/ib_umad_rs.ko
else
	kdir=$(bash "$RIG_DIR/kernel.sh" "$flavour")
	vmlinuz=$kdir/arch/x86/boot/bzImage
	ksft=$(kernel_src_dir)/tools/testing/selftests
	progs=$RIG_CACHE/selftests
	ko=$(bash "$RIG_DIR/module.sh" "$kdir")
fi

stage=$RIG_CACHE/initramfs/$flavour
# One boot of a flavour at a time builds its stage and programs.
lock_dir "$stage"
rm -rf "$stage"
mkdir -p "$stage"/{bin,sbin,lib/modules/base,lib/modules/test,samples,proc,sys,dev,tmp}

# Userspace: busybox, iproute2's ip and rdma, and for Debian's images
# kmod (modprobe, depmod) and systemd-modules-load, for the guest's checks
# of which driver loads; each with its shared libraries. An amd64 guest's
# are the host's (Debian 12's); an arm64 guest's are trixie's arm64
# packages, unpacked in a sysroot (guest-sysroot.sh), which its programs
# are also cross-built against, by clang (the host's GCC cross compilers
# conflict with its gcc-multilib, which the 32-bit programs need).
sysroot=
if [ "$arch" = arm64 ]; then
	[ "$mode" != profile ] || die "profile runs the host's perf, which an arm64 guest cannot"
	sysroot=$(bash "$RIG_DIR/guest-sysroot.sh" "$root")
	cc=(clang --target=aarch64-linux-gnu --sysroot="$sysroot" -fuse-ld=lld)
	busybox=$sysroot/usr/bin/busybox
	tools="/usr/bin/ip /usr/bin/rdma /usr/bin/kmod /usr/lib/systemd/systemd-modules-load"
	# What trixie's programs open with dlopen (no NEEDED names it):
	# systemd opens libkmod, and libkmod the decompressors of Debian's
	# .ko.xz (and .ko.zst).
	libraries=$(printf '/usr/lib/aarch64-linux-gnu/%s ' libkmod.so.2 liblzma.so.5 libzstd.so.1)
	timeout=/usr/bin/timeout
else
	cc=(gcc)
	busybox=/bin/busybox libraries=
	tools="/sbin/ip /usr/bin/rdma"
	[ -z "$image" ] || tools+=" /bin/kmod /lib/systemd/systemd-modules-load"
	timeout=$(command -v timeout)
fi
[ "$mode" != profile ] || tools+=" $(command -v perf || die 'profile needs perf (linux-perf)')"
# A path of the sysroot as the file it names there: its links followed
# inside the sysroot, and merged /usr's (/lib is usr/lib: base-files'
# links, not unpacked there).
in_sysroot() { # path
	local path=$1 target
	[ -e "$sysroot$path" ] || [ -L "$sysroot$path" ] || path=/usr$path
	while [ -L "$sysroot$path" ]; do
		target=$(readlink "$sysroot$path")
		case $target in /*) path=$target ;; *) path=$(dirname "$path")/$target ;; esac
	done
	[ -e "$sysroot$path" ] || die "the sysroot has no $1"
	echo "$path"
}
# The loader and libraries a program of the sysroot needs, as paths the
# guest's loader finds them at: its interpreter, and each library it
# names, from its RUNPATH or the multiarch directory, with what that
# library needs in turn.
sysroot_libs() { # path in the sysroot
	local elf dynamic runpath lib dir found
	elf=$sysroot$(in_sysroot "$1") || exit 1
	readelf -l "$elf" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'
	dynamic=$(readelf -d "$elf")
	runpath=$(sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p' <<<"$dynamic" | tr : ' ')
	for lib in $(sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' <<<"$dynamic"); do
		found=
		for dir in $runpath /usr/lib/aarch64-linux-gnu; do
			[ ! -e "$sysroot$dir/$lib" ] && [ ! -L "$sysroot$dir/$lib" ] ||
				{ found=$dir/$lib && break; }
		done
		[ -n "$found" ] || die "$1 needs $lib, which the sysroot does not have"
		echo "$found"
		sysroot_libs "$found" || exit 1
	done
}
# Copies a program to dir in the stage, with the shared libraries it links
# (from root first, where its packages are unpacked rather than installed;
# from the sysroot for an arm64 guest).
stage_program() { # program, dir, [root]
	local root=${3:-} lib file libs
	if [ -n "$sysroot" ]; then
		file=$(in_sysroot "$1")
		cp "$sysroot$file" "$stage$2/$(basename "$1")"
		libs=$(sysroot_libs "$1" | sort -u)
		for lib in $libs; do
			file=$(in_sysroot "$lib")
			mkdir -p "$stage$(dirname "$lib")"
			cp "$sysroot$file" "$stage$lib"
		done
		return
	fi
	cp "$1" "$stage$2/"
	LD_LIBRARY_PATH=${root:+$root/usr/lib/x86_64-linux-gnu} ldd "$1" |
		grep -o '/[^ ]*' | while read -r lib; do
		mkdir -p "$stage$(dirname "${lib#"$root"}")"
		cp -L "$lib" "$stage${lib#"$root"}"
	done
}
cp "$busybox" "$stage/bin/busybox"
for tool in $tools; do
	stage_program "$tool" /sbin
done
for library in $libraries; do
	mkdir -p "$stage$(dirname "$library")"
	stage_program "$library" "$(dirname "$library")"
done
# The management stack (umad_opensm.sh, the demo), unchanged: Debian's
# opensm (mgmt-stack.sh unpacks it; the sysroot's on arm64) and the
# infiniband-diags the tests use; on amd64, osmtest, ibsim and its example
# fabrics for umad_fabric.sh.
if [ "$mode" = suite ] || [ "$mode" = demo ] || [ "$mode" = fabric ] ||
   [ "${RIG_PROFILE_DEVICE:-}" = fabric ]; then
	mkdir -p "$stage/usr/sbin"
	if [ -n "$sysroot" ]; then
		stage_program /usr/sbin/opensm /usr/sbin
	else
		osm=$(bash "$RIG_DIR/mgmt-stack.sh")
		stage_program "$osm/usr/sbin/opensm" /usr/sbin "$osm"
		stage_program "$osm/usr/sbin/osmtest" /usr/sbin "$osm"
		# What glibc opens with dlopen when osmtest cancels a thread.
		stage_program /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 /usr/lib/x86_64-linux-gnu
		mkdir -p "$stage/usr/share/doc/ibsim-utils"
		stage_program "$osm/usr/bin/ibsim" /usr/sbin "$osm"
		cp -r "$osm/usr/share/doc/ibsim-utils/net-examples" "$stage/usr/share/doc/ibsim-utils/"
	fi
	for tool in ibstat sminfo smpquery ibnetdiscover saquery perfquery ibping ibaddr; do
		stage_program "/usr/sbin/$tool" /usr/sbin
	done
fi
cp "$RIG_DIR/guest/init" "$stage/init"
"${cc[@]}" -O2 -Wall -static -o "$stage/bin/drain" "$RIG_DIR/guest/drain.c"

# The drivers: the kernel's own C ib_umad, and ours; and the test-only
# modules the selftests load themselves.
if [ -n "$image" ]; then
	# Debian builds the IB core, rxe, veth and the C ib_umad as modules;
	# its cloud kernels have no rxe (and the guest no rxe devices).
	# The guest loads lib/modules/base/order first, each module after what
	# it depends on; busybox insmod takes them decompressed.
	# rdma-rc's IB core modules stand in for the image's.
	base_module() { # name
		local file dep
		! grep -qx "$1" "$stage/lib/modules/base/order" 2>/dev/null || return 0
		file=$(find_module "$1" ${core:+"$core"} "$modules/kernel")
		[ -n "$file" ] || die "no module $1 in $modules"
		for dep in $(modinfo -F depends "$file" | tr , ' '); do
			base_module "$dep"
		done
		xz -dcf "$file" > "$stage/lib/modules/base/$1.ko"
		echo "$1" >> "$stage/lib/modules/base/order"
	}
	c_ko=$(find_module ib_umad ${core:+"$core"} "$modules/kernel")
	rxe=rdma_rxe
	case $image in cloud-*) rxe= ;; esac
	for name in ib_uverbs $rxe veth $(modinfo -F depends "${ko:-$c_ko}" | tr , ' '); do
		base_module "$name"
	done
	# What the guest checks it runs, and the compilers that built it.
	basename "$modules" > "$stage/lib/modules/base/release"
	cp "$modules/config" "$stage/lib/modules/base/config"
	xz -dcf "$c_ko" > "$stage/lib/modules/test/ib_umad.ko"
	if [ -n "$ko" ]; then
		# For the guest's modprobe checks (where ib_umad_rs runs), the
		# module tree of a system with the package installed, as Debian has
		# it: the C ib_umad, ib_umad_rs where DKMS put it, and what
		# rdma-core's module list loads (ib_ipoib, which the cloud
		# flavours lack), each with what it needs; rdma-core's list and
		# the package's modprobe.d file.
		tree=$stage/lib/modules/modprobe-tree
		tree_module() { # name
			local file dep
			file=$(find_module "$1" "$modules/kernel")
			[ -n "$file" ] || die "no module $1 in $modules"
			[ ! -e "$tree/${file#"$modules/"}" ] || return 0
			install -D -m 644 "$file" "$tree/${file#"$modules/"}"
			for dep in $(modinfo -F depends "$file" | tr , ' '); do
				tree_module "$dep"
			done
		}
		tree_module ib_umad
		[ -z "$(find_module ib_ipoib "$modules/kernel")" ] || tree_module ib_ipoib
		install -D -m 644 "$ko" "$tree/updates/dkms/$(basename "$ko")"
		cp "$modules"/modules.builtin* "$modules/modules.order" "$tree/"
		cp "$root/usr/lib/modprobe.d/ib_umad_rs.conf" "$stage/lib/modules/"
		install -D -m 644 /etc/rdma/modules/infiniband.conf "$stage/etc/rdma/modules/infiniband.conf"
	fi
	# modprobe and depmod as kmod.
	ln -s kmod "$stage/sbin/modprobe"
	ln -s kmod "$stage/sbin/depmod"
else
	cp "$kdir/drivers/infiniband/core/ib_umad.ko" "$stage/lib/modules/test/"
fi
case $ko in
'') ;;
*.xz) xz -dc "$ko" > "$stage/lib/modules/test/$(basename "$ko" .xz)" ;;
*) cp "$ko" "$stage/lib/modules/test/" ;;
esac
if [ "$flavour" = series ]; then
	cp "$kdir/drivers/infiniband/sw/ib_loopback/ib_loopback.ko" "$stage/lib/modules/test/"
	# The driver's steps but its last, as build.sh built them, each with
	# the tests of what it adds (driver-steps/NAME.tests): a phase
	# each before ib_umad_rs's, after C's (umad_opensm.sh compares each
	# driver's outputs with C's, where C ran first).
	steps=
	for step_ko in "$kdir"/driver-steps/*.ko; do
		[ -e "$step_ko" ] || continue
		step=$(basename "$step_ko" .ko)
		list=$REPO_DIR/tools/upstream/driver-steps/${step#*-}.tests
		[ -e "$list" ] || die "no list of the tests of the driver's step ${step#*-}: $list"
		mkdir -p "$stage/lib/modules/test/steps/$step"
		cp "$step_ko" "$stage/lib/modules/test/steps/$step/ib_umad_rs.ko"
		sed -e 's/#.*//' -e 's/ *$//' -e '/^$/d' "$list" > "$stage/lib/modules/test/steps/$step/tests"
		steps+=step-${step#*-},
	done
	[ -n "$steps" ] || die "the series kernel has no driver steps: run tools/upstream/build.sh"
	case $mode,$drivers in suite,*step-*) ;; suite,*rust*) drivers=${drivers/rust/${steps}rust} ;; esac
else
	bash "$RIG_DIR/test-modules.sh" "$kdir" | while read -r test_ko; do
		cp "$test_ko" "$stage/lib/modules/test/"
	done
fi

selftests=$REPO_DIR/tools/testing/selftests/rdma
# Static test programs, built once into the cache (make rebuilds what
# changed) and installed in the guest as the kernel installs its
# selftests (make TARGETS=rdma install): /kselftest, whose
# run_kselftest.sh runs them there.
# The rig's kernels share them, and test.sh boots two of those at once.
# make goes by timestamps, which say nothing across checkouts sharing the
# cache: the programs are kept only while their sources are the same.
(
	lock_dir "$progs"
	key=$({
		echo "$ksft" "$sysroot"
		cat "$selftests"/* "$REPO_DIR/drivers/infiniband/sw/ib_loopback/ib_loopback_wire.h"
	} | sha256sum | cut -c1-16)
	[ "$(cat "$progs.key" 2>/dev/null)" = "$key" ] || rm -rf "$progs" "$progs.tree"
	mkdir -p "$progs"
	# The series kernel's from its own tree; the others' in a tree of
	# their kernel's selftests framework and ours. Their debug
	# information names the directory they were built in, mapped away,
	# lest a boot of another checkout (CI's fresh clone) differ from one
	# that passed by that alone.
	if [ "$flavour" = series ]; then
		tree=$ksft/rdma src=$RIG_CACHE/upstream/work
	else
		tree=$(selftests_tree "$ksft" "$progs.tree") src=$progs.tree
	fi
	# An arm64 guest's are cross-built as the kernel's selftests are with
	# LLVM, against the sysroot, with its pkg-config files.
	cross=(env) sysroot_flags=
	if [ -n "$sysroot" ]; then
		cross=(env "PKG_CONFIG_LIBDIR=$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig"
			"PKG_CONFIG_SYSROOT_DIR=$sysroot" LLVM=1 ARCH=arm64)
		sysroot_flags="--sysroot=$sysroot "
	fi
	# The rig runs the libibumad programs: built with it, or not at all.
	"${cross[@]}" make -s -C "$tree/.." TARGETS=rdma O="$progs" KSFT_INSTALL_PATH="$stage/kselftest" \
		UMAD_LIBIBUMAD=y USERLDFLAGS="$sysroot_flags${sysroot:+-fuse-ld=lld }-static" \
		USERCFLAGS="$sysroot_flags-ffile-prefix-map=$src=." \
		install > /dev/null
	echo "$key" > "$progs.key"
)
# The kernel's runner times each program out with coreutils' timeout,
# where a distribution has it.
mkdir -p "$stage/usr/bin"
stage_program "$timeout" /usr/bin
# The kernel reports of C code the rig tolerates: KCSAN reports as
# patterns, WARNINGs as the function raising them and its callers.
sed -e 's/#.*//' -e 's/ .*//' -e '/^$/d' "$RIG_DIR/expected/expected-kcsan.txt" > "$stage/lib/expected-kcsan"
sed -e 's/^#.*//' -e 's/^\([^ ]*\) \([^ ]*\) .*/\1 \2/' -e '/^$/d' "$RIG_DIR/expected/expected-warnings.txt" \
	> "$stage/lib/expected-warnings"
for sample in umad_ping umad_bench; do
	"${cc[@]}" -O2 -Wall -static -o "$stage/samples/$sample" \
		"$REPO_DIR/samples/umad/$sample.c" -libumad
done

# Time limits from what the boot runs: each test program may take
# test_timeout before the guest stops it (it fails alone, by name), and the
# VM gets room for every program of every driver at a typical pace, plus
# one that runs out its time. Kernels with sanitizers or debugging (debug,
# race, and series with SLUB's debugging, lockdep and kmemleak) run
# several times slower. A program's own limit is for a hang, not for pace: a guest that shares its cores with two others
# (test.sh) or a kernel build runs at a fraction of its speed.
# A step's list names programs the kernel's runner has (a program that
# is not there would leave the step's share smaller, unseen).
for tests in "$stage"/lib/modules/test/steps/*/tests; do
	[ -e "$tests" ] || continue
	cut -d' ' -f1 "$tests" | while read -r program; do
		grep -qx "rdma:$program" "$stage/kselftest/kselftest-list.txt" ||
			die "$tests names $program, which the selftests do not have"
	done
done
ntests=$(grep -c '^rdma:umad_' "$stage/kselftest/kselftest-list.txt")
[ -z "${RIG_TESTS:-}" ] || ntests=$(echo "$RIG_TESTS" | tr , '\n' | wc -l)
ndrivers=$(echo "$drivers" | tr , '\n' | wc -l)
if [ "$flavour" = plain ] || [ "$flavour" = lean ] || [ -n "$image" ]; then
	pace=30
else
	pace=90
fi
test_timeout=600
# umad_fabric.sh on Debian's 7.3 sweeps 1344 nodes, some 3 minutes a
# driver alone and more beside two other guests.
[ "$flavour" != debian ] || test_timeout=1200
# A long soak or fuzz run by hand needs more (RIG_TEST_TIMEOUT, seconds).
test_timeout=${RIG_TEST_TIMEOUT:-$test_timeout}
case $mode in
suite) VM_TIMEOUT=${VM_TIMEOUT:-$((300 + ntests * ndrivers * pace + test_timeout))} ;;
# A warm-up run and two a round, each about two minutes on Debian's kernel
# under icount, alone: ten each, for a host that runs other guests beside
# it (one round, in one boot, took over 20 minutes beside two other guests
# and a kernel build, 2026-11-28).
bench) VM_TIMEOUT=${VM_TIMEOUT:-$((300 + (1 + 2 * ${RIG_BENCH_ROUNDS:-6}) * 600))} ;;
# Two runs a round, each of up to 20 minutes with fabrics of thousands
# of nodes.
fabric) VM_TIMEOUT=${VM_TIMEOUT:-$((300 + 2 * ${RIG_BENCH_ROUNDS:-3} * 1200))} ;;
*) VM_TIMEOUT=${VM_TIMEOUT:-1200} ;;
esac
# No time past the deadline of the run that boots it (test.sh's, for CI's
# limit): a hung guest then fails by name while there is time to say so.
if [ -n "${RIG_DEADLINE:-}" ]; then
	left=$((RIG_DEADLINE - $(date +%s)))
	[ "$left" -gt 60 ] || die "no time left before the run's deadline for the $flavour guest"
	[ "$VM_TIMEOUT" -le "$left" ] || VM_TIMEOUT=$left
fi

initramfs=$RIG_CACHE/initramfs/$flavour.cpio
(cd "$stage" && find . | cpio -o -H newc --quiet) > "$initramfs"

logdir=${RIG_LOG_DIR:-$REPO_DIR/build/logs}
mkdir -p "$logdir"
log=$logdir/$flavour-$mode.log
# The demo shows the kernel's messages once, through dmesg.
cmdline=
[ "$mode" != demo ] || cmdline=quiet
cmdline+=" rig.flavour=$flavour"
# Room for what a test program makes the kernel print (a flood of
# notices, a lockdep report) until the guest moves it out of the ring
# (its kernel_log, after each program): 128 KB by default.
cmdline+=" log_buf_len=4M"
# The console prints the kernel's messages asynchronously, and a line of
# the guest's written meanwhile comes out split by one: on the series
# kernel, KUnit's KTAP at KERN_INFO (hundreds of lines at boot, the
# driver's suites when it loads: "@@result rust ri# ib_umad_rs_uapi:
# ..."); on Debian's PREEMPT_RT kernel, "random: crng init done" (a
# notice) half a minute into the suite, in a test's result line. The
# guest reads KTAP and reports from dmesg, not the console, so the
# console keeps only warnings and worse (the demo's is quiet).
[ "$mode" = demo ] || cmdline+=" loglevel=5"
# SLUB's debugging on every cache, for the series kernel's checks
# (tools/upstream/kernel.config): red zones, poisoning, consistency checks
# and the allocating and freeing call sites in its reports.
[ "$flavour" != series ] || cmdline+=" slub_debug=FZPU"
# x86's check that the IO-APIC timer ticks counts its interrupts over a
# few milliseconds of host time, which a TCG vCPU descheduled on a loaded
# host may not get: sid's 7.2 panicked so at boot ("IO-APIC + timer
# doesn't work!"), beside three other guests and the lints (2026-11-30).
# Virtual machines boot without it (no_timer_check); the timer that then
# runs is the same.
[ "$arch" != amd64 ] || cmdline+=" no_timer_check"
# The lean kernel (one CPU, no 32-bit programs) runs every test of both
# drivers but the concurrent soak, the receive limit's 202000 MADs, which
# the Debian kernels' suites have, and the 32-bit programs.
# Every test program but those the pattern matches, for rig.tests.
tests_but() { # grep -E pattern
	sed -n 's/^rdma:\(umad_.*\)/\1/p' "$stage/kselftest/kselftest-list.txt" |
		grep -vxE "$1" | LC_ALL=C sort | paste -sd,
}
# A flavour's own share of the tests, unless the caller named tests.
asked_tests=${RIG_TESTS:-}
if [ "$flavour" = lean ] && [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	RIG_TESTS=$(tests_but 'umad_stress|umad_limit|umad_.*_32|umad_fabric.sh')
fi
# The receive limit's 202000 MADs take minutes a driver under KASAN,
# KCSAN or SLUB's debugging and TCG (8 on a loaded guest, past a
# program's limit): the debugging kernels leave it to the others, whose
# limit code is the same.
if [ "$flavour" = debug ] && [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	RIG_TESTS=$(tests_but 'umad_limit|umad_fabric.sh')
fi
if [ "$flavour" = series ] && [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	RIG_TESTS=$(tests_but umad_limit)
fi
# The race kernel runs what races: KCSAN sees C code only, and the rest of
# the suite is the other kernels' to run.
if [ "$flavour" = race ] && [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	RIG_TESTS=umad_stress,umad_fuzz,umad_removal,umad_data,umad_lifecycle.sh,umad_issm,umad_sysfs
fi
# arm64 runs the whole suite (but x86's 32-bit programs); arm64-16k and
# rt-arm64, both drivers, what their kernels change: 16K pages the
# buffers a MAD, an RMPP transfer, a queue of received MADs and an open
# file take; PREEMPT_RT the locks (sleeping spinlock_t) and threaded
# completions under every race the suite has; both, loading and
# unloading, both ABIs, a request/response and opensm bringing a subnet
# up. The rest (sysfs, netlink, the SMPs of ib_loopback, its hotplug, the
# tracepoints, fault injection, which Debian's kernels lack) is arm64's
# to run, so that two cores hold the three boots within CI's time.
if [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	case $flavour in
	arm64-16k) RIG_TESTS=umad_open,umad_ioctl,umad_data,umad_gsi,umad_limit,umad_fuzz,umad_removal,umad_stress,umad_lifecycle.sh,umad_opensm.sh ;;
	rt-arm64) RIG_TESTS=umad_open,umad_ioctl,umad_issm,umad_data,umad_gsi,umad_fuzz,umad_removal,umad_stress,umad_lifecycle.sh,umad_opensm.sh ;;
	esac
fi
# The debug kernel runs all of ib_umad_rs, and of C what compares under
# its fault injection, and the management stack, whose outputs the second
# driver compares with the first's: the plain kernel already has every C
# result (the Debian and race suites run removal for both drivers in one
# boot), and KASAN and kmemleak are there for ib_umad_rs's memory.
if [ "$flavour" = debug ] && [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	RIG_C_TESTS=${RIG_C_TESTS-umad_faults,umad_opensm.sh}
fi
# The series kernel runs all of ib_umad_rs as the tree builds it, and of
# C what the series' C fixes change (umad_removal, umad_issm, umad_sysfs's
# rename, umad_netlink's issm query; umad_stress's soak shows the removal
# fix again, and is left to
# runs by hand for CI's time), what compares under fault injection and the
# management stack for the comparisons: the Debian kernels' suites have
# every C result of 7.3's code, and the race kernel, by hand, races the
# rest of C under KCSAN.
if [ "$flavour" = series ] && [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	RIG_C_TESTS=${RIG_C_TESTS-umad_faults,umad_removal,umad_issm,umad_sysfs,umad_netlink,umad_opensm.sh}
fi
# opensm's sweeps of simulated fabrics (umad_fabric.sh): on Debian's 7.3
# kernel, ibsim's example (where the faults and osmtest are) and a fat
# tree of 1024 hosts, 1344 nodes; on the series kernel, whose kmemleak,
# lockdep and KFENCE watch ib_umad_rs through the faults, the example. The
# larger fabrics are the fabric benchmark's (fabric-bench.sh). The other
# kernels' MAD layers are those, or their opensm has no ibsim beside it
# (arm64). RIG_FABRICS (umad_fabric.sh's UMAD_FABRICS, a comma between
# two) chooses others.
if [ "$mode" = suite ] && [ -z "$asked_tests" ]; then
	case $flavour in
	debian) RIG_FABRICS=${RIG_FABRICS:-example:net.2sw2path4hca,fat:3:16:1024} ;;
	series) RIG_FABRICS=${RIG_FABRICS:-example:net.2sw2path4hca} ;;
	*) [ -n "${RIG_TESTS:-}" ] || RIG_TESTS=$(tests_but umad_fabric.sh) ;;
	esac
fi
[ -z "${RIG_TESTS:-}" ] || cmdline+=" rig.tests=$RIG_TESTS"
[ -z "${RIG_FABRICS:-}" ] || cmdline+=" rig.fabrics=$RIG_FABRICS"
[ -z "${RIG_C_TESTS:-}" ] || cmdline+=" rig.c_tests=$RIG_C_TESTS"
[ -z "${RIG_STRESS_CYCLES:-}" ] || cmdline+=" rig.stress_cycles=$RIG_STRESS_CYCLES"
[ -z "${RIG_FUZZ_OPS:-}" ] || cmdline+=" rig.fuzz_ops=$RIG_FUZZ_OPS"
[ -z "${RIG_FUZZ_SEED:-}" ] || cmdline+=" rig.fuzz_seed=$RIG_FUZZ_SEED"
cmdline+=" rig.cpus=$RIG_CPUS rig.test_timeout=$test_timeout"
[ -z "${RIG_PROFILE_RUNS:-}" ] || cmdline+=" rig.profile_runs=$RIG_PROFILE_RUNS"
[ -z "${RIG_PROFILE_GROUPS:-}" ] || cmdline+=" rig.profile_groups=$RIG_PROFILE_GROUPS"
[ -z "${RIG_PROFILE_DEVICE:-}" ] || cmdline+=" rig.profile_device=$RIG_PROFILE_DEVICE"
[ -z "${RIG_BENCH_ROUNDS:-}" ] || cmdline+=" rig.bench_rounds=$RIG_BENCH_ROUNDS"
[ -z "${RIG_BENCH_GROUPS:-}" ] || cmdline+=" rig.bench_groups=$RIG_BENCH_GROUPS"
[ -z "${RIG_TRACE_DEVICE:-}" ] || cmdline+=" rig.trace_device=$RIG_TRACE_DEVICE"
# Multi-threaded TCG runs each vCPU on a host thread; icount (instruction
# counting, for the benchmark) needs them on one. So do Debian's amd64
# kernels: they patch static branches at run time (JUMP_LABEL, which the
# rig's kernels leave out), and under multi-threaded TCG another vCPU may
# run the patch's transient int3 after the patch is done: "Oops: int3" in
# sched_clock_cpu at boot, in one of two boots. arm64 patches a branch in
# one instruction, with no transient one.
tcg_threads=multi
case ${RIG_QEMU_EXTRA:-} in *icount*) tcg_threads=single ;; esac
[ -z "$image" ] || [ "$arch" = arm64 ] || tcg_threads=single
# arm64's: QEMU's virt board, with the CPU model that has every feature
# TCG emulates (16K pages among them), its pointer authentication QEMU's
# own algorithm rather than the architecture's (the same checks, a
# fraction of the time); Debian's arm64 image is an uncompressed Image,
# which -kernel boots as it is.
if [ "$arch" = arm64 ]; then
	qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on) console=ttyAMA0
else
	qemu=(qemu-system-x86_64) console=ttyS0
fi
# shellcheck disable=SC2206 # RIG_QEMU_EXTRA is options, split as such
qemu+=(-accel "tcg,thread=$tcg_threads" -smp "$RIG_CPUS" ${RIG_QEMU_EXTRA:-} -m 2048
	-nographic -no-reboot -nic none -monitor none -serial stdio -kernel "$vmlinuz" -initrd "$initramfs"
	-append "console=$console panic=-1 rig.mode=$mode rig.drivers=$drivers $cmdline")
# A boot's inputs: the kernel, every file of the initramfs and QEMU (its
# version and command line). Under RIG_REUSE_PASSED (test.sh), a suite or
# benchmark boot whose inputs are those of one that passed is not run
# again: the log of that one stands for it. differential.sh and bench.sh
# keep the log of a boot that passed (keep_passed_boot), at the path in
# $log.kept: one per flavour, mode and command line.
boot_key=$({
	sha256sum < "$vmlinuz" &&
		(cd "$stage" && find . -printf '%p %y %m %l\n' | LC_ALL=C sort &&
			find . -type f -print0 | LC_ALL=C sort -z | xargs -r0 sha256sum) &&
		"${qemu[0]}" --version && printf '%s\n' "${qemu[@]}"
} | sha256sum | cut -c1-16) || die "could not read the boot's inputs"
kept=$RIG_CACHE/boots/$flavour-$mode-$(printf '%s' "$cmdline" | sha256sum | cut -c1-8)-$boot_key.log
echo "$kept" > "$log.kept"
if [ -n "${RIG_REUSE_PASSED:-}" ] && cp -p "$kept" "$log" 2> /dev/null; then
	cache_note warm "the $flavour $mode boot: one with the same inputs passed, $(date -r "$log" '+%F %R')"
	echo "$log"
	exit 0
fi
[ -z "${RIG_REUSE_PASSED:-}" ] || cache_note cold "the $flavour $mode boot"
log "booting the $flavour kernel ($mode, $RIG_CPUS CPUs, ${VM_TIMEOUT}s at most); serial log in $log"
status=0
timeout --foreground -k 10 "$VM_TIMEOUT" "${qemu[@]}" < /dev/null > "$log" 2>&1 || status=$?
# Plain text: no carriage returns, no terminal escapes from the firmware.
sed -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' "$log" > "$log.tmp" &&
	mv "$log.tmp" "$log"
[ $status -eq 0 ] || log "qemu ended with status $status (124: timed out after ${VM_TIMEOUT}s)"
echo "$log"
grep -q '^@@rig verdict done' "$log"
