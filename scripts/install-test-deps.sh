#!/usr/bin/env bash
# install-test-deps.sh: what the tests need beyond what twnsbench itself
# needs (scripts/install-deps.sh): Chromium, in which nsbench/report's
# browser test loads the HTML report headless, takes its screenshots and
# checks the page it rendered. Without it that test skips, saying so.
# Idempotent: installs only what is missing, with --no-install-recommends,
# and exits 0 without touching apt when everything is present.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib/packages.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "install-test-deps.sh: must run as root (try: sudo $0)" >&2
	exit 2
fi

packages=(chromium)

mapfile -t missing < <(missing_packages "${packages[@]}")
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-test-deps.sh: all packages present"
	exit 0
fi
echo "install-test-deps.sh: installing ${missing[*]}"
install_packages "${missing[@]}"
echo "install-test-deps.sh: done"
