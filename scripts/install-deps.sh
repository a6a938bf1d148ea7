#!/usr/bin/env bash
# install-deps.sh: the system packages twnsbench needs on Debian 12 (bookworm).
# Idempotent: installs only what is missing, with --no-install-recommends
# (recommends pull systemd, udev and a whole kernel), and exits 0 without
# touching apt when everything is present. netperf lives in Debian's non-free
# component: when apt has no candidate for it even after `apt-get update` and
# no sources entry enables non-free on deb.debian.org, one is added in its own
# file.
#
# Env: TWNSBENCH_APT_SOURCES_DIR (default /etc/apt/sources.list.d): where that
#      file goes and which entries are looked at (with ../sources.list); the
#      tests point it at a temporary directory.
#      TWNSBENCH_SYSTEMD_DIR (default /run/systemd/system): present when
#      systemd runs the host (the tests point it elsewhere).
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
	# seed 002's userspace tunnels: sshuttle (its nft method needs nftables;
	# Debian's package depends on iptables only), and strongSwan with ESP in
	# userspace (kernel-libipsec is in libcharon-extra-plugins; gcm and
	# openssl in the standard plugins; chapoly and curve25519 in the extra)
	sshuttle nftables charon-systemd strongswan-swanctl libcharon-extra-plugins
	libstrongswan-standard-plugins libstrongswan-extra-plugins
)
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

mapfile -t missing < <(missing_packages "${packages[@]}")
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps.sh: all packages present"
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
echo "install-deps.sh: done"
