#!/usr/bin/env bash
# mkinitrd.sh KVER OUT: build the guest's initramfs (gzip'd newc cpio):
# a static busybox, init (stage 1), stage2, and the modules init loads, in
# dependency order:
#   - what mounting the host root needs: virtio PCI, 9p over virtio,
#     overlayfs, and virtio-rng (entropy for WireGuard keys and sshd);
#   - what the kernel-path tests need: wireguard, sch_netem, sch_fq, esp4,
#     xfrm_user, veth, tun, bridge;
#   - the crypto the ipsec transport's variants ask ESP for (the kernel would
#     load them on demand; packed, a missing one fails here, not mid-run):
#     authenc, echainiv and seqiv (ESP's IV generators), gcm + ghash,
#     chacha20poly1305 + chacha20 + poly1305, ctr (holds rfc3686), AES,
#     SHA-1, SHA-256 and hmac (in 6.1 aes, sha1, sha256 and hmac are built
#     in: checked against modules.builtin). ESP's tunnel mode is in the
#     xfrm core: xfrm4_tunnel/tunnel4 (IP-in-IP SAs) are not needed.
#     What the kernel otherwise loads on demand when the first SA is made
#     (seen with lsmod before and after the ipsec and libreswan rows):
#     authencesn (Libreswan's CBC + HMAC SAs use extended sequence
#     numbers), and the IV generators' random source, drbg with
#     jitterentropy_rng, sha512 and sha3. Packed, the esp_lacks check can
#     block module loading and leave exactly one algorithm missing.
# Each module's dependencies come from /lib/modules/KVER/modules.dep, which
# lists every (transitive) dependency of a module; modprobe loads them last
# to first. Compressed modules are decompressed here: busybox insmod cannot
# read .ko.xz / .ko.zst. A module built into KVER is simply not in
# modules.dep's left column and is skipped.
set -euo pipefail
KVER=$1 OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
MODS=${VMTEST_MODULES:-"virtio_pci virtio_rng 9pnet_virtio 9p overlay wireguard sch_netem sch_fq esp4 xfrm_user veth tun bridge
	authenc echainiv seqiv gcm ghash_generic chacha20poly1305 chacha_generic poly1305_generic ctr
	aes_generic aesni_intel sha1_generic sha256_generic hmac
	authencesn sha512_generic sha512_ssse3 sha3_generic jitterentropy_rng drbg"}
moddir=/lib/modules/$KVER
[ -f "$moddir/modules.dep" ] || { echo "mkinitrd: $moddir/modules.dep missing" >&2; exit 1; }
if readelf -l /bin/busybox 2>/dev/null | grep -q 'Requesting program interpreter'; then
	echo "mkinitrd: /bin/busybox is dynamically linked; install busybox-static" >&2
	exit 1
fi

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W"/{bin,dev,proc,sys,lib/modules}
cp /bin/busybox "$W/bin/busybox"
install -m 755 "$HERE/init" "$W/init"
install -m 644 "$HERE/stage2" "$W/stage2"

# modules.dep line: "kernel/x/a.ko.xz: kernel/y/b.ko.xz kernel/z/c.ko.xz"
# Names compare with '-' and '_' equal, as modprobe does.
awk -v want="$MODS" '
	function norm(p,   b) { b = p; sub(/.*\//, "", b); sub(/\.ko(\.(xz|zst|gz))?$/, "", b); gsub(/-/, "_", b); return b }
	BEGIN { n = split(want, w, " ") }
	{ k = $1; sub(/:$/, "", k); line[norm(k)] = $0 }
	END {
		for (i = 1; i <= n; i++) {
			m = w[i]; gsub(/-/, "_", m)
			if (!(m in line)) { print "builtin-or-missing " m; continue }
			c = split(line[m], f, " "); sub(/:$/, "", f[1])
			for (j = c; j >= 2; j--) if (!(f[j] in seen)) { seen[f[j]] = 1; print f[j] }
			if (!(f[1] in seen)) { seen[f[1]] = 1; print f[1] }
		}
	}' "$moddir/modules.dep" >"$W/list"

: >"$W/modules.order"
while read -r rel extra; do
	if [ "$rel" = builtin-or-missing ]; then
		if ! grep -qE "/${extra//_/[-_]}\.ko\$" "$moddir/modules.builtin" 2>/dev/null; then
			echo "mkinitrd: module $extra is neither in modules.dep nor built in" >&2
			exit 1
		fi
		continue
	fi
	src=$moddir/$rel
	b=$(basename "$rel")
	case "$b" in
	*.ko.xz) b=${b%.xz}; xz -dc "$src" >"$W/lib/modules/$b" ;;
	*.ko.zst) b=${b%.zst}; zstd -qdc "$src" >"$W/lib/modules/$b" ;;
	*.ko.gz) b=${b%.gz}; gzip -dc "$src" >"$W/lib/modules/$b" ;;
	*) cp "$src" "$W/lib/modules/$b" ;;
	esac
	echo "$b" >>"$W/modules.order"
done <"$W/list"

(cd "$W" && find . ! -name list | cpio -o -H newc --quiet | gzip -1) >"$OUT"
echo "mkinitrd: $(wc -l <"$W/modules.order") modules: $(tr '\n' ' ' <"$W/modules.order")" >&2
