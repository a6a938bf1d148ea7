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
# Override the pins with CADDY_VERSION / XRAY_VERSION. The default Xray is the
# newest tagged xray-core release; tw's go.mod may pin a later pseudo-version,
# which the checksum database may not know yet.
set -euo pipefail

CADDY_VERSION=${CADDY_VERSION:-v2.11.9}
XRAY_VERSION=${XRAY_VERSION:-v1.260327.0}

if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
dir=$(mkdir -p "$1" && cd "$1" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

echo "install-relay-tools: caddy $CADDY_VERSION -> $dir/caddy"
GOBIN=$build go install "github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION"
install -m 0755 "$build/caddy" "$dir/caddy"

echo "install-relay-tools: xray $XRAY_VERSION -> $dir/xray"
GOBIN=$build go install "github.com/xtls/xray-core/main@$XRAY_VERSION"
install -m 0755 "$build/main" "$dir/xray"

# A go-installed Caddy says "unknown" to `caddy version`; build-info knows.
"$dir/caddy" build-info | awk '$2 == "github.com/caddyserver/caddy/v2" { print "Caddy " $3 }'
"$dir/xray" version | head -n 1
