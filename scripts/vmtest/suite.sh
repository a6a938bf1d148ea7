#!/usr/bin/env bash
# suite.sh: `make vmtest`. Builds twnsbench and the kernel-path test binaries
# on the host, then runs checks.sh in one VM booted from Debian's stock
# kernel (vmrun.sh), where kernel WireGuard and sch_netem exist. The guest
# writes its results under results/vmtest/ (shared read-write); the host
# must be unchanged afterwards: no namespace, mount or QEMU process more.
#
# Ends with checks.sh's summary line: kernel, WireGuard implementation,
# impairment method, measured RTT and loss, the IPsec rows measured.
#
# Env: GO (go binary), VMTEST_TIMEOUT (s, default 1200: the whole guest run),
#      VMTEST_CHECKS="doctor netem ..." (a subset of checks.sh's list).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
say() { echo "vmtest: $*"; }
secs() { echo $(($(date +%s) - $1)); }
t_start=$(date +%s)

# The guest mounts its own tmpfs over /tmp (see README): a checkout there
# would vanish from its view and every check would fail with exit 127.
case "$ROOT/" in
/tmp/*)
	say "the checkout is under /tmp ($ROOT), which the guest replaces with its own: clone it elsewhere"
	exit 2
	;;
esac

if [ "$(id -u)" -ne 0 ]; then
	say "needs root (QEMU's 9p passthrough of /, the package install)"
	exit 2
fi

# What the host has before; compared at the end.
host_state() {
	ip netns list 2>/dev/null | sed 's/^/netns /'
	sed 's/^/mount /' /proc/self/mounts
	# this suite's QEMU: the one sharing $OUT (others may run their own)
	pgrep -f "qemu-system-x86_64 .*path=$OUT," | sed "s/^/qemu /"
}
# Other engineers' benchmark runs on a development host come and go
# (twnsb-<id>): not this suite's doing, and the guest cannot make any.
OUT=$ROOT/results/vmtest
mkdir -p bin/vmtest
host_state | grep -v twnsb >"$ROOT/bin/.vmtest-host-before"

t=$(date +%s)
vars=$(bash scripts/vmtest/prepare.sh) || { say "prepare.sh failed"; exit 2; }
eval "$vars"
export VMTEST_KVER VMTEST_KERNEL VMTEST_INITRD
t_prep=$(secs "$t")

t=$(date +%s)
"$GO" build -o bin/twnsbench ./cmd/twnsbench &&
	"$GO" build -o bin/wireguard-go golang.zx2c4.com/wireguard &&
	"$GO" test -c -o bin/vmtest/impair.test ./nsbench/impair &&
	"$GO" test -c -o bin/vmtest/transport.test ./nsbench/transport &&
	"$GO" test -c -ldflags='-s -w' -o bin/vmtest/nsbench.test ./nsbench && # copied to each emulated machine: smaller is sooner
	"$GO" test -c -o bin/vmtest/twnsbench.test ./cmd/twnsbench || {
	say "build failed"
	exit 1
}
t_build=$(secs "$t")

rm -rf "$OUT"
mkdir -p "$OUT"
log=$ROOT/bin/vmtest/guest.log
t=$(date +%s)
# shellcheck disable=SC2086 # VMTEST_CHECKS is a word list
VMTEST_VERBOSE=1 VMTEST_RW=$OUT VMTEST_TIMEOUT=${VMTEST_TIMEOUT:-1200} \
	bash scripts/vmtest/vmrun.sh bash scripts/vmtest/checks.sh "$OUT" ${VMTEST_CHECKS:-} 2>&1 | tee "$log" | grep --line-buffered -v "^vmtest summary: " # printed once, last
rc=${PIPESTATUS[0]}
t_vm=$(secs "$t")

host_state | grep -v twnsb >"$ROOT/bin/.vmtest-host-after"
if ! diff -u "$ROOT/bin/.vmtest-host-before" "$ROOT/bin/.vmtest-host-after" >"$ROOT/bin/.vmtest-host-diff"; then
	say "FAIL: the host changed (namespaces, mounts or QEMU processes):"
	grep '^[-+][a-z]' "$ROOT/bin/.vmtest-host-diff"
	rc=1
fi
rm -f "$ROOT/bin/.vmtest-host-before" "$ROOT/bin/.vmtest-host-after" "$ROOT/bin/.vmtest-host-diff"

boot=$(sed -n 's/.*wall \([0-9.]*s\); guest uptime (s): .*t_cmd_start=\([0-9.]*\).*/qemu wall \1 in all, command started at guest uptime \2s/p' "$log" | tail -1)
say "timings: host prep ${t_prep}s, build ${t_build}s, VM ${t_vm}s (${boot:-no boot timing}), total $(secs "$t_start")s; results in results/vmtest/"
summary=$(grep '^vmtest summary: ' "$log" | tail -1)
if [ "$rc" -ne 0 ]; then
	say "FAILED (exit $rc)"
fi
echo "${summary:-vmtest summary: kernel $VMTEST_KVER; wireguard n/a; impairment n/a; rtt n/a; loss n/a; ipsec n/a; libreswan n/a (the guest printed none)}"
exit "$rc"
