#!/usr/bin/env bash
# prepare.sh: make sure the VM runner has what it needs, and print where it is.
#
# Installs (once, as root, --no-install-recommends) QEMU, Debian's stock kernel
# (the linux-image-amd64 meta package: its WireGuard, sch_netem, ESP... are
# modules, which this host's kernel lacks), a static busybox for the guest's
# first stage and the tools to unpack the kernel. Then builds, under
# .cache/KVER/ (gitignored), an ELF vmlinux QEMU boots directly (PVH entry:
# ~4 s faster than the compressed bzImage under TCG) and a tiny initramfs.
#
# Installing the kernel package puts a kernel in /boot and /lib/modules; it
# does not change the running kernel (nothing here touches a bootloader).
#
# Prints shell assignments: VMTEST_KVER=... VMTEST_KERNEL=... VMTEST_INITRD=...
# (vmrun.sh and suite.sh eval them). Progress goes to stderr: only that final
# line may reach stdout.
#
# Env: VMTEST_CACHE (default .cache next to this script);
#      VMTEST_PACKAGES_ONLY=1: stop (exit 0, nothing on stdout) right after
#      the package step (scripts/scripts_test.go runs it with stub apt tools).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/packages.sh"
CACHE=${VMTEST_CACHE:-$HERE/.cache}
say() { echo "vmtest: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	say "must run as root (QEMU's 9p passthrough of / and the package install need it)"
	exit 2
fi

# --- packages -------------------------------------------------------------
packages=(qemu-system-x86 linux-image-amd64 busybox-static kmod cpio xz-utils zstd gzip)
mapfile -t missing < <(missing_packages "${packages[@]}")
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	# busybox-static replaces (removes) the dynamic busybox. The kernel package
	# runs /etc/kernel/postinst.d hooks: with no bootloader installed that is
	# only initramfs-tools, whose image the VM does not use (mkinitrd.sh builds
	# its own); INITRD=No makes that hook skip it, and with no image in /boot
	# the update-initramfs trigger has nothing to do. Building it costs ~20 s
	# on an idle machine and minutes on a busy one.
	INITRD=No install_packages "${missing[@]}"
fi
if [ "${VMTEST_PACKAGES_ONLY:-}" = 1 ]; then
	exit 0
fi

# --- the kernel version, from the installed packages' own metadata ---------
# linux-image-amd64 depends on exactly one linux-image-<ABI>-amd64; its file
# list names its vmlinuz. No glob over /boot or /lib/modules: this machine
# may hold other kernels (a -rt flavour, older ABIs).
deps=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null) || {
	say "linux-image-amd64 is not installed (did the install above fail?)"
	exit 1
}
kpkg=$(printf '%s\n' "$deps" | tr ',|' '\n\n' | sed -n 's/^ *\(linux-image-[^ ]*\).*/\1/p')
if [ "$(printf '%s\n' "$kpkg" | grep -c .)" -ne 1 ]; then
	say "cannot tell the kernel package from linux-image-amd64's Depends: '$kpkg'"
	exit 1
fi
vmlinuz=$(dpkg -L "$kpkg" | grep -E '^/boot/vmlinuz-' || true)
if [ "$(printf '%s\n' "$vmlinuz" | grep -c .)" -ne 1 ]; then
	say "$kpkg does not ship exactly one /boot/vmlinuz-*: '$vmlinuz'"
	exit 1
fi
KVER=${vmlinuz#/boot/vmlinuz-}
case "$KVER" in
*-rt-*) say "refusing the PREEMPT_RT kernel $KVER"; exit 1 ;;
esac
[ -d "/lib/modules/$KVER" ] || { say "/lib/modules/$KVER is missing"; exit 1; }

dir=$CACHE/$KVER
mkdir -p "$dir"

# --- vmlinux: the ELF inside the bzImage -----------------------------------
# Debian's bzImage carries the kernel as one compressed stream (XZ for 6.1,
# ZSTD for 6.12); find its magic and decompress from there.
if [ ! -s "$dir/vmlinux" ]; then
	say "extracting vmlinux from $vmlinuz"
	bash "$HERE/extract-vmlinux.sh" "$vmlinuz" "$dir/vmlinux.tmp.$$"
	mv -f "$dir/vmlinux.tmp.$$" "$dir/vmlinux"
fi

# --- initramfs: rebuilt when its inputs change (0.2 s) ----------------------
stamp=$(cat "$HERE/mkinitrd.sh" "$HERE/init" "$HERE/stage2" /bin/busybox | sha256sum | cut -c1-16)
initrd=$dir/initrd-$stamp.gz
if [ ! -s "$initrd" ]; then
	say "building initramfs for $KVER"
	bash "$HERE/mkinitrd.sh" "$KVER" "$initrd.tmp.$$"
	mv -f "$initrd.tmp.$$" "$initrd"
	find "$dir" -maxdepth 1 -name 'initrd-*.gz' ! -name "initrd-$stamp.gz" -delete
fi

printf 'VMTEST_KVER=%q VMTEST_KERNEL=%q VMTEST_INITRD=%q\n' "$KVER" "$dir/vmlinux" "$initrd"
