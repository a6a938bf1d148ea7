#!/usr/bin/env bash
# install-deps.sh: the system packages twnsbench needs on Debian 12 (bookworm).
# Idempotent; installs with --no-install-recommends (recommends pull systemd,
# udev and a whole kernel). netperf lives in Debian's non-free component, so a
# sources entry for it is added once, in its own file.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root (try: sudo $0)" >&2
	exit 2
fi

packages=(
	iperf3 netperf openssh-client openssh-server iproute2 ethtool iputils-ping
	wireguard-tools procps ca-certificates
)

nonfree=/etc/apt/sources.list.d/twnsbench-non-free.sources
if ! apt-cache policy netperf 2>/dev/null | grep -q 'Candidate: [0-9]'; then
	if [ ! -f "$nonfree" ]; then
		. /etc/os-release
		cat >"$nonfree" <<SRC
# added by twnsbench scripts/install-deps.sh: netperf is in non-free
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME:-bookworm}
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	fi
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps.sh: all packages present"
	exit 0
fi
echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# iperf3's postinst asks whether to start a system daemon: answer no, so
# nothing listens on the host.
echo 'iperf3 iperf3/start_daemon boolean false' | debconf-set-selections
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps.sh: done"
