#!/usr/bin/env bash
# extract-vmlinux.sh BZIMAGE OUT: write the ELF vmlinux held inside a Debian
# bzImage to OUT. QEMU boots that ELF through its PVH entry point, skipping
# the firmware and the in-guest decompression (~4-5 s under TCG).
#
# The bzImage holds the kernel as one compressed stream (XZ in Debian's 6.1,
# ZSTD in 6.12, gzip elsewhere); try each occurrence of each magic until one
# decompresses to an ELF file.
set -euo pipefail
in=$1 out=$2
export LC_ALL=C # byte-wise grep; a UTF-8 locale mangles the magics

try() { # MAGIC(grep -P) DECOMPRESSOR...
	local off
	for off in $(grep -obUaP "$1" "$in" | cut -d: -f1); do
		tail -c +$((off + 1)) "$in" | "${@:2}" >"$out" 2>/dev/null || true
		if [ "$(head -c 4 "$out" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			return 0
		fi
	done
	return 1
}

try '\xfd7zXZ\x00' xz -dc --single-stream ||
	try '\x28\xb5\x2f\xfd' zstd -dcq ||
	try '\x1f\x8b\x08' gzip -dc || {
	rm -f "$out"
	echo "extract-vmlinux: no ELF kernel found in $in" >&2
	exit 1
}
