# scripts/lib/packages.sh: Debian package helpers shared by
# scripts/install-deps.sh and scripts/vmtest/prepare.sh. Source it; it sets
# no shell options and is safe under `set -euo pipefail`.
#
#   missing_packages PKG...  prints, one a line, each PKG that is not
#                            installed (never installed, removed with its
#                            config files left, or unknown to dpkg)
#   apt_update               apt-get update, waiting for another apt
#   install_packages PKG...  apt_update (once per script) then install,
#                            non-interactive, --no-install-recommends
#
# apt's own output goes to stderr: prepare.sh's stdout is eval'ed by callers.

# Set once apt_update has run; clear it to make install_packages update again
# (after adding a sources entry).
packages_updated=

missing_packages() {
	local p st
	for p in "$@"; do
		# dpkg-query exits 1 for a package it does not know (and prints
		# nothing): a normal answer here, not an error.
		st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) || true
		# Second letter = current state: "ii"/"hi" installed; "rc"
		# (config files), "un" or nothing means missing.
		[ "${st:1:1}" = i ] || printf '%s\n' "$p"
	done
}

apt_update() {
	local out rc deadline=$((SECONDS + 600))
	# DPkg::Lock::Timeout covers dpkg's lock, not apt-get update's lists
	# lock (apt 2.6): retry while another apt holds that one. LC_ALL=C so
	# the lock message can be recognised.
	while :; do
		rc=0
		out=$(LC_ALL=C apt-get -o DPkg::Lock::Timeout=600 update -q 2>&1) || rc=$?
		printf '%s\n' "$out" >&2
		[ "$rc" -ne 0 ] || break
		if [[ $out != *'Could not get lock'* ]] || [ "$SECONDS" -ge "$deadline" ]; then
			echo "apt-get update failed (exit $rc)" >&2
			return "$rc"
		fi
		echo "apt-get update: another apt holds the lists lock; retrying in 5 s" >&2
		sleep 5
	done
	packages_updated=1
}

install_packages() {
	[ $# -gt 0 ] || return 0
	export DEBIAN_FRONTEND=noninteractive
	[ -n "$packages_updated" ] || apt_update || return
	# Lock::Timeout: wait for another apt on this machine instead of failing.
	apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$@" >&2
}
