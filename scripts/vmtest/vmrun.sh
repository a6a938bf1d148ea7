#!/usr/bin/env bash
# vmrun.sh CMD [ARGS...]: run CMD as root in a VM booted from Debian's stock
# kernel (QEMU, software emulation: this host's KVM cannot run a stock
# kernel), with the caller's environment, umask and working directory; print
# its output (stdout and stderr merged, as the guest's serial console carries
# them) and exit with its exit code.
#
# The guest sees the host's root filesystem read-only over 9p under a RAM
# overlay: it can write anywhere, the host sees none of it. It has a fresh
# /run, no network device (tests build their own namespaces inside it), and
# the modules mkinitrd.sh lists already loaded. Works as
# `go test -exec scripts/vmtest/vmrun.sh` too.
#
# Exit codes: CMD's; 124 when the VM ran out of time (VMTEST_TIMEOUT,
# default 600 s) and was stopped; 125 when the guest died twice without an
# exit code (an early-boot oops under multi-threaded TCG was seen once in
# ~90 boots: it is retried once); 2 when the runner could not start.
#
# Env: VMTEST_TIMEOUT (s, per boot), VMTEST_MEM (4G), VMTEST_SMP (2),
#      VMTEST_RW=DIR (a host directory the guest may write, at the same path),
#      VMTEST_APPEND (more kernel command line),
#      VMTEST_VERBOSE=1 (boot timings on stderr), VMTEST_CACHE (.cache),
#      VMTEST_KVER + VMTEST_KERNEL + VMTEST_INITRD (prepare.sh's output;
#      prepare.sh runs when they are unset).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
say() { echo "vmtest: $*" >&2; }
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { say "usage: $0 CMD [ARGS...]"; exit 2; }

if [ -z "${VMTEST_KVER:-}" ] || [ -z "${VMTEST_KERNEL:-}" ] || [ -z "${VMTEST_INITRD:-}" ]; then
	vars=$(bash "$HERE/prepare.sh") || { say "prepare.sh failed"; exit 2; }
	eval "$vars"
fi
CACHE=${VMTEST_CACHE:-$HERE/.cache}
TIMEOUT=${VMTEST_TIMEOUT:-600}
append="console=ttyS0 quiet loglevel=3 panic=-1 ${VMTEST_APPEND:-}"
rw=()
if [ -n "${VMTEST_RW:-}" ]; then
	# The path goes on the kernel command line and into a QEMU option.
	case "$VMTEST_RW" in
	/*[[:space:],]* | *[[:space:],]*) say "VMTEST_RW must be an absolute path without spaces or commas"; exit 2 ;;
	/*) ;;
	*) say "VMTEST_RW must be an absolute path"; exit 2 ;;
	esac
	[ -d "$VMTEST_RW" ] || { say "VMTEST_RW: $VMTEST_RW is not a directory"; exit 2; }
	rw=(-virtfs "local,path=$VMTEST_RW,mount_tag=vmrw,security_model=passthrough")
	append+=" vmtest.rw=$VMTEST_RW"
fi

mkdir -p "$CACHE"
RUN=$(mktemp -d "$CACHE/run.XXXXXX") || exit 2
qpid=
cleanup() { rm -rf "$RUN"; }
interrupted() {
	if [ -n "$qpid" ]; then
		kill "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
	fi
	cleanup
	exit 130
}
trap interrupted INT TERM HUP
trap cleanup EXIT

{ # the caller's environment (minus what names the host session), umask, cwd, then the command
	export -p | grep -vE '^declare -[a-zA-Z-]* (HOSTNAME|SHLVL|OLDPWD|PWD|_|TMUX[A-Z_]*|SSH_[A-Z_]*|DISPLAY|XDG_[A-Z_]*)(=|$)'
	echo "umask $(umask)"
	echo "cd $(printf %q "$PWD") || exit 126"
	printf 'exec'
	printf ' %q' "$@"
	echo
} >"$RUN/cmd"

boot() {
	rm -f "$RUN/rc" "$RUN/timing"
	local start end ms
	start=$(date +%s%N)
	# timeout puts QEMU in its own process group (Ctrl-C reaches only this
	# script, whose trap stops it); -k: SIGKILL 10 s after the SIGTERM.
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
		-machine q35 -accel tcg,thread=multi -cpu max \
		-smp "${VMTEST_SMP:-2}" -m "${VMTEST_MEM:-4G}" \
		-nodefaults -display none -no-reboot -serial stdio \
		-kernel "$VMTEST_KERNEL" -initrd "$VMTEST_INITRD" -append "$append" \
		-device virtio-rng-pci \
		-virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap \
		-virtfs "local,path=$RUN,mount_tag=vmout,security_model=passthrough" \
		"${rw[@]}" </dev/null &
	qpid=$!
	wait "$qpid"
	qrc=$?
	qpid=
	end=$(date +%s%N)
	ms=$(((end - start) / 1000000))
	if [ -n "${VMTEST_VERBOSE:-}" ]; then
		say "kernel $VMTEST_KVER, qemu rc $qrc, wall $((ms / 1000)).$(printf %03d $((ms % 1000)))s; guest uptime (s): $(tr '\n' ' ' <"$RUN/timing" 2>/dev/null)"
	fi
}

for attempt in 1 2; do
	boot
	if [ -f "$RUN/rc" ]; then
		exit "$(cat "$RUN/rc")"
	fi
	if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
		say "the VM ran out of time (${TIMEOUT}s, VMTEST_TIMEOUT) and was stopped"
		exit 124
	fi
	[ "$attempt" -eq 1 ] && say "the guest died without an exit code (qemu rc $qrc); retrying once"
done
say "the guest died twice without an exit code (qemu rc $qrc)"
exit 125
