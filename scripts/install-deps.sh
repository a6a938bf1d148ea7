#!/usr/bin/env bash
# install-deps.sh: the system packages twnsbench needs on Debian 12 (bookworm).
# Idempotent: installs only what is missing, with --no-install-recommends
# (recommends pull systemd, udev and a whole kernel), and exits 0 without
# touching apt when everything is present. netperf lives in Debian's non-free
# component: when apt has no candidate for it even after `apt-get update` and
# no sources entry enables non-free on deb.debian.org, one is added in its own
# file.
#
# Libreswan's package conflicts with the strongSwan packages (apt would
# remove strongSwan): it is unpacked privately instead (apt-get download +
# dpkg-deb -x, no maintainer scripts, no service, nothing under /etc) into
# /var/cache/twnsbench/libreswan, where the libreswan transport looks for
# it; its libraries are installed normally. The unpack is kept once made
# (delete the directory to fetch a newer one).
#
# Env: TWNSBENCH_APT_SOURCES_DIR (default /etc/apt/sources.list.d): where that
#      file goes and which entries are looked at (with ../sources.list); the
#      tests point it at a temporary directory.
#      TWNSBENCH_SYSTEMD_DIR (default /run/systemd/system): present when
#      systemd runs the host (the tests point it elsewhere).
#      TWNSBENCH_LIBRESWAN_DIR (default /var/cache/twnsbench/libreswan): the
#      private unpack (the transport reads the same variable).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib/packages.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root (try: sudo $0)" >&2
	exit 2
fi

packages=(
	iperf3 netperf openssh-client openssh-server iproute2 ethtool iputils-ping
	wireguard-tools procps ca-certificates openvpn
	# perf, for run --profile (the roles' CPU stacks)
	linux-perf
	# seed 002's userspace tunnels: sshuttle (its nft method needs nftables;
	# Debian's package depends on iptables only), and strongSwan with ESP in
	# userspace (kernel-libipsec is in libcharon-extra-plugins; gcm and
	# openssl in the standard plugins; chapoly and curve25519 in the extra)
	sshuttle nftables charon-systemd strongswan-swanctl libcharon-extra-plugins
	libstrongswan-standard-plugins libstrongswan-extra-plugins
	# the privately unpacked libreswan's libraries (what pluto, whack and
	# addconn link, libc aside) and NSS's certutil for pluto's database
	libnss3-tools libnss3 libnspr4 libunbound8 libldns3 libevent-core-2.1-7
	libevent-pthreads-2.1-7 libcurl3-nss libldap-2.5-0 libcap-ng0 libaudit1
	libpam0g libselinux1 libsystemd0 libcrypt1
)
libreswan_dir=${TWNSBENCH_LIBRESWAN_DIR:-/var/cache/twnsbench/libreswan}
sources_dir=${TWNSBENCH_APT_SOURCES_DIR:-/etc/apt/sources.list.d}
nonfree=$sources_dir/twnsbench-non-free.sources

# apt-cache policy exits 0 either way; capture rather than pipe into grep -q,
# whose early exit could make the pipeline fail under pipefail.
has_candidate() {
	local policy
	policy=$(LC_ALL=C apt-cache policy "$1" 2>/dev/null) || true
	[[ $policy == *'Candidate: '[0-9]* ]]
}

# Whether an enabled entry for deb.debian.org/debian already has the non-free
# component (one-line .list or deb822 .sources; non-free-firmware does not
# count).
nonfree_configured() {
	local files=() f
	for f in "${sources_dir%/*}/sources.list" "$sources_dir"/*.list "$sources_dir"/*.sources; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || return 1
	awk '
		function stanza_end() { if (uri && comp && !off) found = 1; uri = comp = off = 0 }
		FNR == 1 { stanza_end() }
		/^[[:space:]]*$/ { stanza_end(); next }
		/^[[:space:]]*#/ { next }
		/^deb[[:space:]]/ && /deb\.debian\.org\/debian\/?[[:space:]]/ && /[[:space:]]non-free([[:space:]]|$)/ { found = 1 }
		/^URIs:/ && /deb\.debian\.org\/debian\/?([[:space:]]|$)/ { uri = 1 }
		/^Components:/ && /[[:space:]]non-free([[:space:]]|$)/ { comp = 1 }
		/^Enabled:[[:space:]]*(no|false)/ { off = 1 }
		END { stanza_end(); exit !found }' "${files[@]}"
}

# libreswan_unpacked: the private unpack is complete (its version stamp is
# written last).
libreswan_unpacked() {
	[ -x "$libreswan_dir/usr/libexec/ipsec/pluto" ] && [ -x "$libreswan_dir/usr/libexec/ipsec/whack" ] &&
		[ -s "$libreswan_dir/.twnsbench-version" ]
}

# download_libreswan DIR: the package's .deb into DIR. apt-get download
# writes into the current directory; the sandbox user _apt could not
# write into the private DIR, so it downloads as root (the file is still
# checked against the signed lists).
download_libreswan() {
	(cd "$1" && apt-get -o APT::Sandbox::User=root download libreswan >&2)
}

# unpack_libreswan: libreswan's files (binaries under usr/libexec/ipsec and
# usr/sbin) into $libreswan_dir, replacing a partial one; built beside it
# and moved into place, so an interrupted run leaves no half unpack.
# The temporary directory (global: the EXIT trap removes it on every path).
libreswan_tmp=
unpack_libreswan() {
	local parent debs version rc=0
	parent=$(dirname "$libreswan_dir")
	mkdir -p "$parent"
	libreswan_tmp=$(mktemp -d "$parent/.libreswan.XXXXXX")
	trap 'rm -rf "$libreswan_tmp"' EXIT
	if ! download_libreswan "$libreswan_tmp"; then
		# Stale or absent lists on a fresh machine: update once, retry.
		if [ -n "$packages_updated" ]; then
			rc=1
		else
			apt_update && download_libreswan "$libreswan_tmp" || rc=$?
		fi
		if [ "$rc" -ne 0 ]; then
			echo "install-deps.sh: apt-get download libreswan failed (exit $rc)" >&2
			return "$rc"
		fi
	fi
	debs=("$libreswan_tmp"/libreswan_*.deb)
	[ -f "${debs[0]}" ] || { echo "install-deps.sh: apt-get download libreswan left no .deb" >&2; return 1; }
	version=$(dpkg-deb -f "${debs[0]}" Version)
	dpkg-deb -x "${debs[0]}" "$libreswan_tmp/root"
	[ -x "$libreswan_tmp/root/usr/libexec/ipsec/pluto" ] || { echo "install-deps.sh: libreswan $version has no usr/libexec/ipsec/pluto" >&2; return 1; }
	printf '%s\n' "$version" >"$libreswan_tmp/root/.twnsbench-version"
	rm -rf "$libreswan_dir"
	mv "$libreswan_tmp/root" "$libreswan_dir"
	echo "install-deps.sh: libreswan $version unpacked into $libreswan_dir"
}

mapfile -t missing < <(missing_packages "${packages[@]}")
if [ ${#missing[@]} -eq 0 ]; then
	if libreswan_unpacked; then
		echo "install-deps.sh: all packages present"
		exit 0
	fi
	unpack_libreswan
	echo "install-deps.sh: done"
	exit 0
fi
echo "install-deps.sh: installing ${missing[*]}"

if [[ " ${missing[*]} " == *" netperf "* ]] && ! has_candidate netperf; then
	# On a fresh machine the lists may just be stale or absent.
	apt_update
	if ! has_candidate netperf; then
		if nonfree_configured; then
			echo "install-deps.sh: non-free is configured but apt has no netperf; trying anyway" >&2
		else
			. /etc/os-release
			echo "install-deps.sh: adding $nonfree (netperf is in non-free)"
			cat >"$nonfree" <<SRC
# added by twnsbench scripts/install-deps.sh: netperf is in non-free
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME:-bookworm}
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
			packages_updated= # install_packages must fetch the new component
		fi
	fi
fi

# iperf3's postinst asks whether to start a system daemon: answer no, so
# nothing listens on the host.
echo 'iperf3 iperf3/start_daemon boolean false' | debconf-set-selections
install_packages "${missing[@]}"
# charon-systemd's package enables and starts strongswan.service, a host
# IKE daemon: twnsbench starts its own charon per namespace, so the one
# just installed is stopped and disabled again (one installed before is
# left as it was).
if [[ " ${missing[*]} " == *" charon-systemd "* ]] && [ -d "${TWNSBENCH_SYSTEMD_DIR:-/run/systemd/system}" ]; then
	echo "install-deps.sh: stopping and disabling strongswan.service (twnsbench runs its own charon in each namespace)"
	systemctl disable --now strongswan.service || echo "install-deps.sh: warning: could not disable strongswan.service" >&2
fi
libreswan_unpacked || unpack_libreswan
echo "install-deps.sh: done"
