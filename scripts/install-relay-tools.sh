#!/usr/bin/env bash
# install-relay-tools.sh DIR: the relay programs of the tw transport, built
# from the Go module proxy with pinned versions into DIR:
#   DIR/caddy  Caddy >= 2.8 (tw's Caddyfile needs trust_pool and
#              stream_close_delay; Debian's caddy 2.6 rejects it)
#   DIR/xray   Xray (go install names the binary "main")
# Then: twnsbench run --caddy DIR/caddy --xray DIR/xray ...
# Needs Go (the version in go.mod) and about 3 minutes of 2 cores for Caddy.
# tw itself is not installed here: bring your own binary (--tw PATH).
#
# Idempotent: a binary already in DIR built from the pinned version is kept.
# Override the pins with CADDY_VERSION / XRAY_VERSION. The default Xray is the
# xray-core that tw's go.mod pins (a pseudo-version after v1.260327.0): the
# tagged v1.260327.0 lacks the "client-cert" certificate usage with which
# tw's embedded Xray presents its client certificate to Caddy, and the relay
# tests use this Xray as the tenant's side too. The checksum database does
# not know that pseudo-version, so its hash is pinned here (XRAY_SUM, the
# h1: line of tw's go.sum) and checked before the build, as go.sum would.
# GO names the go binary
# (default: go on PATH, else /usr/local/go/bin/go, which sudo's PATH lacks).
set -euo pipefail

CADDY_VERSION=${CADDY_VERSION:-v2.11.9}
XRAY_VERSION=${XRAY_VERSION:-v1.260327.1-0.20260617150841-1ca32a7af8b5}
XRAY_SUM=${XRAY_SUM-h1:Ma34mTfbxHOwrhp6xRadqJcE+Aaq3NjHVmf1NKGXOxM=}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
if ! command -v "$GO" >/dev/null; then
	echo "install-relay-tools: no Go toolchain at $GO (set GO=/path/to/go)" >&2
	exit 2
fi
dir=$(mkdir -p "$1" && cd "$1" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

# built MODULE BIN: the version of MODULE that BIN was built from (Go's
# build info), or nothing. A binary of the pinned version is kept: a
# second run, as CI's cached directory sees it, builds nothing.
built() {
	[ -x "$2" ] || return 0
	"$GO" version -m "$2" 2>/dev/null | awk -v m="$1" '$1 == "mod" && $2 == m { print $3 }'
}

# tool NAME MODULE PACKAGE VERSION [SUM]: DIR/NAME built from
# PACKAGE@VERSION, unless DIR/NAME was built from MODULE at VERSION already.
# With SUM, MODULE is fetched without the checksum database and its hash
# must equal SUM.
tool() {
	if [ "$(built "$2" "$dir/$1")" = "$4" ]; then
		echo "install-relay-tools: $1 $4 already in $dir/$1"
		return
	fi
	echo "install-relay-tools: $1 $4 -> $dir/$1"
	local nosumdb=${GONOSUMDB-}
	if [ -n "${5-}" ]; then
		nosumdb=$2
		local sum
		sum=$(cd "$build" && GONOSUMDB=$nosumdb "$GO" mod download -json "$2@$4" | awk -F'"' '$2 == "Sum" { print $4 }')
		if [ "$sum" != "$5" ]; then
			echo "install-relay-tools: $2@$4 has hash ${sum:-(none)}, want $5" >&2
			exit 1
		fi
	fi
	GOBIN=$build GONOSUMDB=$nosumdb "$GO" install "$3@$4"
	install -m 0755 "$build/$(basename "$3")" "$dir/$1"
}

tool caddy github.com/caddyserver/caddy/v2 github.com/caddyserver/caddy/v2/cmd/caddy "$CADDY_VERSION"
tool xray github.com/xtls/xray-core github.com/xtls/xray-core/main "$XRAY_VERSION" "$XRAY_SUM"

# A go-installed Caddy says "unknown" to `caddy version`; build-info knows.
"$dir/caddy" build-info | awk '$2 == "github.com/caddyserver/caddy/v2" { print "Caddy " $3 }'
# awk, not head -n 1: head exits after one line, xray's next write then gets
# SIGPIPE, and pipefail turns that into a failure of the whole script.
"$dir/xray" version | awk 'NR == 1'
