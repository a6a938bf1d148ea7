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
# which the checksum database may not know yet. GO names the go binary
# (default: go on PATH, else /usr/local/go/bin/go, which sudo's PATH lacks).
set -euo pipefail

CADDY_VERSION=${CADDY_VERSION:-v2.11.9}
XRAY_VERSION=${XRAY_VERSION:-v1.260327.0}
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

echo "install-relay-tools: caddy $CADDY_VERSION -> $dir/caddy"
GOBIN=$build "$GO" install "github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION"
install -m 0755 "$build/caddy" "$dir/caddy"

echo "install-relay-tools: xray $XRAY_VERSION -> $dir/xray"
GOBIN=$build "$GO" install "github.com/xtls/xray-core/main@$XRAY_VERSION"
install -m 0755 "$build/main" "$dir/xray"

# A go-installed Caddy says "unknown" to `caddy version`; build-info knows.
"$dir/caddy" build-info | awk '$2 == "github.com/caddyserver/caddy/v2" { print "Caddy " $3 }'
# awk, not head -n 1: head exits after one line, xray's next write then gets
# SIGPIPE, and pipefail turns that into a failure of the whole script.
"$dir/xray" version | awk 'NR == 1'
