#!/usr/bin/env bash
# ib_umad_rs for every flavour of Debian's 7.3 kernel, as its users get it:
# the ib-umad-rs-dkms package installed in a trixie root, where DKMS builds
# the module for each kernel whose headers are there (debian-package.sh;
# amd64's in the debian root, the other six in one root of their own, the
# arm64 ones cross-built). Then each module is checked against that
# flavour's stock image, as its loader will check it:
#  - an ELF of the image's machine;
#  - the vermagic of the image's own modules (its ib_umad.ko);
#  - every symbol it takes exported by the image: by vmlinux (as the
#    headers' Module.symvers records it, which modpost read too: the
#    image's System.map is a stub) or by a module it depends on (the
#    image's .ko's own __ksymtab_);
#  - no CRCs to compare: no flavour has CONFIG_MODVERSIONS (a flavour that
#    turns it on fails here until CRCs are compared too).
# And --install of a cross-built module is refused. Prints a line per
# flavour, then "N passed, N failed".
set -uo pipefail
source "$(dirname "$0")/lib.sh"

# ELF machine names as readelf prints them.
declare -A machine=([amd64]="Advanced Micro Devices X86-64" [arm64]="AArch64")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for flavour in debian "${DEBIAN_FLAVOURS[@]}"; do
	name=${flavour/#debian/amd64}
	paths=$(bash "$RIG_DIR/debian-kernel.sh" "$flavour") || { check_result "$name" "no root"; continue; }
	eval "$paths"
	# debian-package.sh's answer too (resolving the versions asks the mirror).
	declare -x "RIG_DEBIAN_${flavour//-/_}=$paths"
	if ! ko=$(bash "$RIG_DIR/debian-package.sh" "$flavour"); then
		check_result "$name" "DKMS built no module"
		continue
	fi
	why=
	# DKMS compresses a module where the kernel's are (not in the root).
	xz -dcf "$ko" > "$tmp/ib_umad_rs.ko"
	got=$(readelf -h "$tmp/ib_umad_rs.ko" | sed -n 's/^ *Machine: *//p')
	[ "$got" = "${machine[$arch]:-}" ] || why+="${why:+; }an ELF for $got"
	c_ko=$(find_module ib_umad "$modules/kernel")
	want=$(modinfo -F vermagic "$c_ko")
	got=$(modinfo -F vermagic "$tmp/ib_umad_rs.ko")
	[ -n "$want" ] && [ "$got" = "$want" ] || why+="${why:+; }vermagic '$got', the image's '$want'"
	if [ ! -r "$modules/config" ]; then
		why+="${why:+; }no config in the image"
	elif grep -qx 'CONFIG_MODVERSIONS=y' "$modules/config"; then
		why+="${why:+; }the kernel has CONFIG_MODVERSIONS: compare the CRCs"
	fi
	# What the image exports to the module.
	awk '$3 == "vmlinux" { print $2 }' "$root/usr/src/linux-headers-$(basename "$modules")/Module.symvers" \
		> "$tmp/exports"
	for dep in $(modinfo -F depends "$tmp/ib_umad_rs.ko" | tr , ' '); do
		dep_ko=$(find_module "$dep" "$modules/kernel")
		[ -n "$dep_ko" ] || { why+="${why:+; }no $dep in the image"; continue; }
		xz -dcf "$dep_ko" > "$tmp/dep.ko"
		readelf -Ws "$tmp/dep.ko" | awk '$8 ~ /^__ksymtab_/ { sub(/^__ksymtab_/, "", $8); print $8 }' >> "$tmp/exports"
	done
	# What it takes.
	readelf -Ws "$tmp/ib_umad_rs.ko" | awk '$7 == "UND" && $8 != "" { print $8 }' | sort -u > "$tmp/wanted"
	[ -s "$tmp/wanted" ] || why+="${why:+; }readelf found no symbols it takes"
	missing=$(sort -u "$tmp/exports" | comm -13 - "$tmp/wanted")
	[ -z "$missing" ] || why+="${why:+; }$(wc -l <<<"$missing") symbols the image does not export: $(head -n3 <<<"$missing" | paste -sd ' ')"
	check_result "$name: DKMS's ib_umad_rs.ko for $(basename "$modules")" "$why"
done

# The package's build-for-debian.sh refuses to install a module it
# cross-built (the modprobe.d file would go to the machine that built it).
eval "$RIG_DEBIAN_arm64"
krel=$(basename "$modules")
want="--install: $krel is a kernel for aarch64, and this machine is x86_64"
script=$(cd "$root" && ls -d usr/src/ib-umad-rs-*/tools/build-for-debian.sh)
if out=$(in_build_root "$root" "/$script" --install "$krel" 2>&1); then
	check_result "arm64: --install refused" "exit status 0"
elif ! grep -qF -- "$want" <<<"$out"; then
	check_result "arm64: --install refused" "not for that reason: $(tail -n1 <<<"$out")"
else
	check_result "arm64: --install refused" ""
fi
check_summary
