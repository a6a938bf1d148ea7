// Package scripts tests the shell scripts under scripts/ with stand-in
// executables (dpkg-query, apt-get, apt-cache, ...) first on PATH, so that a
// fresh machine (none, some or all packages installed) can be played without
// installing or removing anything. The stand-ins log every call; the tests
// compare those calls with the exact expected ones. They need bash only, and
// no root: `id` is stubbed too.
package scripts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The scripts' package lists, in their order.
var (
	depsPackages = []string{
		"iperf3", "netperf", "openssh-client", "openssh-server", "iproute2", "ethtool",
		"iputils-ping", "wireguard-tools", "procps", "ca-certificates", "openvpn", "linux-perf",
		"sshuttle", "nftables", "charon-systemd", "strongswan-swanctl", "libcharon-extra-plugins",
		"libstrongswan-standard-plugins", "libstrongswan-extra-plugins",
		"libnss3-tools", "libnss3", "libnspr4", "libunbound8", "libldns3", "libevent-core-2.1-7",
		"libevent-pthreads-2.1-7", "libcurl3-nss", "libldap-2.5-0", "libcap-ng0", "libaudit1",
		"libpam0g", "libselinux1", "libsystemd0", "libcrypt1",
	}
	vmPackages = []string{
		"qemu-system-x86", "linux-image-amd64", "busybox-static", "kmod", "cpio",
		"xz-utils", "zstd", "gzip",
	}
)

const (
	aptUpdate  = "apt-get|-o DPkg::Lock::Timeout=600 update -q"
	aptInstall = "apt-get|-o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "
	iperfSeed  = "debconf-set-selections||iperf3 iperf3/start_daemon boolean false"
	// The private libreswan unpack's steps, with the temporary directory
	// beside the unpack ("@" is the test's directory).
	lsDownload = "apt-get|-o APT::Sandbox::User=root download libreswan"
	lsDeb      = "@/var/.libreswan.TMP/libreswan_4.10-2+deb12u1_amd64.deb"
	lsVersion  = "dpkg-deb|-f " + lsDeb + " Version|"
	lsExtract  = "dpkg-deb|-x " + lsDeb + " @/var/.libreswan.TMP/root|"
)

// lsUnpack is what unpacking libreswan calls when the lists are fresh.
var lsUnpack = []string{lsDownload, lsVersion, lsExtract}

// Each stub appends "NAME|ARGS|EXTRA" to $STUB_LOG.
const stubLog = `log() { printf '%s|%s|%s\n' "$1" "$2" "${3-}" >>"$STUB_LOG"; }
`

var stubs = map[string]string{
	"id": `echo 0
`,
	"systemctl": stubLog + `log systemctl "$*"
`,
	// Like the real one (checked on Debian 12): "ii " and exit 0 for an
	// installed package, "rc " for one removed with its config files, and for
	// one dpkg does not know, nothing on stdout, a message on stderr, exit 1.
	// Formats other than ${db:Status-Abbrev} print nothing.
	"dpkg-query": stubLog + `log dpkg-query "$*"
fmt= rc=0
for a in "$@"; do
	case $a in
	-W) ;;
	-f=*) fmt=${a#-f=} ;;
	*)
		if [[ " $STUB_INSTALLED " == *" $a "* ]]; then st='ii '
		elif [[ " $STUB_CONFIGFILES " == *" $a "* ]]; then st='rc '
		else echo "dpkg-query: no packages found matching $a" >&2; rc=1; continue
		fi
		[[ $fmt != *Status-Abbrev* ]] || printf '%s' "$st"
		;;
	esac
done
exit $rc
`,
	"dpkg": stubLog + `log dpkg "$*"
echo "stub dpkg: not expected to run" >&2
exit 1
`,
	// update: fails once with apt's lock message when $STUB_DIR/locked
	// exists, fails outright with STUB_UPDATE_FAIL=1; else marks the lists
	// as updated.
	"apt-get": stubLog + `log apt-get "$*" "INITRD=${INITRD-} DEBIAN_FRONTEND=${DEBIAN_FRONTEND-}"
case " $* " in
*" update "*)
	if [ -e "$STUB_DIR/locked" ]; then
		rm "$STUB_DIR/locked"
		echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2
		exit 100
	fi
	if [ "${STUB_UPDATE_FAIL-}" = 1 ]; then
		echo "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease" >&2
		exit 100
	fi
	touch "$STUB_DIR/updated"
	echo "Reading package lists..."
	;;
*" install "*) echo "stub: installed" ;;
*" download libreswan "*)
	# STUB_DOWNLOAD=after-update: fails until the lists are updated;
	# never: always fails. Else the .deb lands in the current directory.
	if [ "${STUB_DOWNLOAD-}" = never ] || { [ "${STUB_DOWNLOAD-}" = after-update ] && [ ! -e "$STUB_DIR/updated" ]; }; then
		echo "E: Unable to locate package libreswan" >&2
		exit 100
	fi
	echo "stub deb" >libreswan_4.10-2+deb12u1_amd64.deb
	;;
esac
`,
	// dpkg-deb -f DEB Version, dpkg-deb -x DEB DIR (the package's pluto,
	// whack and addconn). Logged with the test's directory as "@" and the
	// temporary directory's random part as TMP.
	"dpkg-deb": stubLog + `log dpkg-deb "$(printf '%s' "$*" | sed -E "s|$STUB_DIR|@|g; s/\.libreswan\.[A-Za-z0-9]{6}/.libreswan.TMP/g")"
[ -f "$2" ] || { echo "dpkg-deb: $2: no such file" >&2; exit 2; }
case $1 in
-f) echo 4.10-2+deb12u1 ;;
-x)
	mkdir -p "$3/usr/libexec/ipsec" "$3/usr/sbin"
	for f in pluto whack addconn; do printf '#!/bin/sh\n' >"$3/usr/libexec/ipsec/$f"; chmod 755 "$3/usr/libexec/ipsec/$f"; done
	;;
*) exit 2 ;;
esac
`,
	// netperf's candidate: STUB_NETPERF=have, after-update or never.
	"apt-cache": stubLog + `log apt-cache "$*"
c='(none)'
case ${STUB_NETPERF-} in
have) c=2.7.0-0.1 ;;
after-update) [ ! -e "$STUB_DIR/updated" ] || c=2.7.0-0.1 ;;
esac
printf '%s:\n  Installed: (none)\n  Candidate: %s\n  Version table:\n' "$2" "$c"
`,
	"debconf-set-selections": stubLog + `log debconf-set-selections "$*" "$(cat)"
`,
	"sleep": stubLog + `log sleep "$*"
`,
}

type host struct {
	dir     string // the test's temp dir: stubs, log, apt sources
	sources string // stands for /etc/apt/sources.list.d
	env     map[string]string
}

// newHost writes the stubs and describes the machine: installed and
// config-files-only packages, netperf's candidate.
func newHost(t *testing.T, installed, configFiles []string, netperf string) *host {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("skipped: bash not found")
	}
	h := &host{dir: t.TempDir()}
	bin := filepath.Join(h.dir, "bin")
	h.sources = filepath.Join(h.dir, "apt", "sources.list.d")
	for _, d := range []string{bin, h.sources} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+bash+"\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.env = map[string]string{
		"PATH":                      bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"STUB_DIR":                  h.dir,
		"STUB_LOG":                  filepath.Join(h.dir, "calls.log"),
		"STUB_INSTALLED":            strings.Join(installed, " "),
		"STUB_CONFIGFILES":          strings.Join(configFiles, " "),
		"STUB_NETPERF":              netperf,
		"TWNSBENCH_APT_SOURCES_DIR": h.sources,
		"TWNSBENCH_SYSTEMD_DIR":     filepath.Join(h.dir, "no-systemd"),
		"VMTEST_CACHE":              filepath.Join(h.dir, "cache"),
		"TWNSBENCH_LIBRESWAN_DIR":   filepath.Join(h.dir, "var", "libreswan"),
	}
	return h
}

// unpacked makes the host's private libreswan unpack complete, as an
// earlier install-deps.sh left it.
func (h *host) unpacked(t *testing.T) {
	t.Helper()
	dir := h.env["TWNSBENCH_LIBRESWAN_DIR"]
	exec := filepath.Join(dir, "usr", "libexec", "ipsec")
	if err := os.MkdirAll(exec, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pluto", "whack", "addconn"} {
		if err := os.WriteFile(filepath.Join(exec, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".twnsbench-version"), []byte("4.10-2+deb12u1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantUnpacked: the private unpack is complete, stamped with the
// package's version, and no temporary directory is left beside it.
func wantUnpacked(t *testing.T, h *host) {
	t.Helper()
	dir := h.env["TWNSBENCH_LIBRESWAN_DIR"]
	for _, f := range []string{"pluto", "whack", "addconn"} {
		if fi, err := os.Stat(filepath.Join(dir, "usr", "libexec", "ipsec", f)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s not unpacked executable: %v", f, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".twnsbench-version")); err != nil || string(b) != "4.10-2+deb12u1\n" {
		t.Errorf("version stamp %q, %v", b, err)
	}
	wantNoTemp(t, h)
}

func wantNoTemp(t *testing.T, h *host) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(h.env["TWNSBENCH_LIBRESWAN_DIR"]), ".libreswan.*"))
	if len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}

type result struct {
	code           int
	stdout, stderr string
	calls          []string // "NAME|ARGS|EXTRA", dpkg-query's left out
	installs       [][]string
}

// run runs bash SCRIPT (relative to scripts/) with the host's environment
// plus extra "K=V" settings.
func (h *host) run(t *testing.T, script string, extra ...string) result {
	t.Helper()
	return h.runArgs(t, script, nil, extra...)
}

func (h *host) runArgs(t *testing.T, script string, args []string, extra ...string) result {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := h.env[k]; ours || strings.HasPrefix(k, "VMTEST_") || strings.HasPrefix(k, "STUB_") ||
			k == "INITRD" || k == "DEBIAN_FRONTEND" || k == "GO" {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	for k, v := range h.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", script, err)
	}
	log, err := os.ReadFile(h.env["STUB_LOG"])
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(log), "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "dpkg-query|") {
			continue
		}
		// apt-get's environment matters only for install (INITRD=No).
		if strings.HasPrefix(line, "apt-get|") && !strings.Contains(line, " install ") {
			line = line[:strings.LastIndex(line, "|")]
		}
		r.calls = append(r.calls, line)
		if rest, ok := strings.CutPrefix(line, aptInstall); ok {
			pkgs, _, _ := strings.Cut(rest, "|")
			r.installs = append(r.installs, strings.Fields(pkgs))
		}
	}
	t.Logf("%s: exit %d\nstdout:\n%s\nstderr:\n%s\ncalls:\n%s", script, r.code, r.stdout, r.stderr, strings.Join(r.calls, "\n"))
	return r
}

func except(all []string, drop ...string) []string {
	var out []string
	for _, p := range all {
		if !contains(drop, p) {
			out = append(out, p)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func install(env string, pkgs ...string) string {
	return aptInstall + strings.Join(pkgs, " ") + "|" + env
}

const depsEnv = "INITRD= DEBIAN_FRONTEND=noninteractive"

func wantCalls(t *testing.T, r result, want ...string) {
	t.Helper()
	if !reflect.DeepEqual(r.calls, want) {
		t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(r.calls, "\n  "), strings.Join(want, "\n  "))
	}
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, code, r.stderr)
	}
}

func wantNoFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s exists (err %v); want none", path, err)
	}
}

func TestInstallDepsNoneInstalled(t *testing.T) {
	h := newHost(t, nil, nil, "have")
	r := h.run(t, "install-deps.sh")
	wantCode(t, r, 0)
	if want := [][]string{depsPackages}; !reflect.DeepEqual(r.installs, want) {
		t.Errorf("installed %q, want %q", r.installs, want)
	}
	// The iperf3 answer is seeded before the install; netperf has a
	// candidate, so one update and no sources entry.
	// Libreswan is unpacked after the install, with the lists fresh.
	wantCalls(t, r, append([]string{"apt-cache|policy netperf|", iperfSeed, aptUpdate, install(depsEnv, depsPackages...)}, lsUnpack...)...)
	wantNoFile(t, filepath.Join(h.sources, "twnsbench-non-free.sources"))
	if !strings.Contains(r.stdout, "install-deps.sh: installing "+strings.Join(depsPackages, " ")+"\n") {
		t.Errorf("stdout does not name the packages:\n%s", r.stdout)
	}
	wantUnpacked(t, h)
	if want := "install-deps.sh: libreswan 4.10-2+deb12u1 unpacked into " + h.env["TWNSBENCH_LIBRESWAN_DIR"] + "\n"; !strings.Contains(r.stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
	}
}

func TestInstallDepsSomeInstalled(t *testing.T) {
	installed := []string{"iperf3", "netperf", "openssh-client", "iproute2", "procps", "ca-certificates"}
	// openssh-server removed but not purged: dpkg knows it, state "rc".
	h := newHost(t, installed, []string{"openssh-server"}, "never")
	r := h.run(t, "install-deps.sh")
	wantCode(t, r, 0)
	want := append([]string{"openssh-server", "ethtool", "iputils-ping", "wireguard-tools", "openvpn", "linux-perf", "sshuttle", "nftables",
		"charon-systemd", "strongswan-swanctl", "libcharon-extra-plugins", "libstrongswan-standard-plugins", "libstrongswan-extra-plugins"},
		depsPackages[len(depsPackages)-15:]...)
	if !reflect.DeepEqual(r.installs, [][]string{want}) {
		t.Errorf("installed %q, want [%q]", r.installs, want)
	}
	// netperf is installed: its candidate is not looked at.
	wantCalls(t, r, append([]string{iperfSeed, aptUpdate, install(depsEnv, want...)}, lsUnpack...)...)
	wantNoFile(t, filepath.Join(h.sources, "twnsbench-non-free.sources"))
	wantUnpacked(t, h)
}

// Under systemd, the strongswan.service that charon-systemd's package
// starts on the host is stopped and disabled again, right after the
// install; without systemd (above) systemctl is never called.
func TestInstallDepsDisablesHostStrongSwan(t *testing.T) {
	h := newHost(t, nil, nil, "have")
	systemd := filepath.Join(h.dir, "systemd")
	os.MkdirAll(systemd, 0o755)
	h.unpacked(t)
	r := h.run(t, "install-deps.sh", "TWNSBENCH_SYSTEMD_DIR="+systemd)
	wantCode(t, r, 0)
	wantCalls(t, r, "apt-cache|policy netperf|", iperfSeed, aptUpdate, install(depsEnv, depsPackages...),
		"systemctl|disable --now strongswan.service|")
	// Installed before: left as the host had it.
	h = newHost(t, []string{"charon-systemd"}, nil, "have")
	r = h.run(t, "install-deps.sh", "TWNSBENCH_SYSTEMD_DIR="+systemd)
	for _, c := range r.calls {
		if strings.HasPrefix(c, "systemctl|") {
			t.Errorf("systemctl called for a charon-systemd installed before: %q", c)
		}
	}
}

func TestInstallDepsAllInstalled(t *testing.T) {
	h := newHost(t, depsPackages, nil, "never")
	h.unpacked(t)
	r := h.run(t, "install-deps.sh")
	wantCode(t, r, 0)
	wantCalls(t, r) // no apt at all
	if r.stdout != "install-deps.sh: all packages present\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	wantNoFile(t, filepath.Join(h.sources, "twnsbench-non-free.sources"))
}

// Only netperf missing: its non-free sources entry is added only when apt
// has no candidate after an update and no entry enables non-free already.
func TestInstallDepsNetperfSources(t *testing.T) {
	const (
		bookworm     = "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n"
		keyring      = "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
		firmwareOnly = bookworm + "Components: main non-free-firmware\n" + keyring
		withNonFree  = bookworm + "Components: main non-free non-free-firmware\n" + keyring
		disabled     = bookworm + "Components: main non-free\nEnabled: no\n" + keyring
		security     = "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main non-free\n"
	)
	for _, tc := range []struct {
		name, netperf string
		files         map[string]string // relative to the apt dir
		added         bool
	}{
		{name: "stale lists", netperf: "after-update", files: map[string]string{"sources.list.d/debian.sources": withNonFree}},
		{name: "no non-free", netperf: "never", files: map[string]string{"sources.list.d/debian.sources": firmwareOnly}, added: true},
		{name: "no sources", netperf: "never", added: true},
		{name: "non-free in deb822", netperf: "never", files: map[string]string{"sources.list.d/debian.sources": withNonFree}},
		{name: "non-free in sources.list", netperf: "never", files: map[string]string{
			"sources.list": "deb http://deb.debian.org/debian bookworm main contrib non-free\n"}},
		{name: "non-free in a .list", netperf: "never", files: map[string]string{
			"sources.list.d/extra.list": "deb [arch=amd64] http://deb.debian.org/debian/ bookworm non-free\n"}},
		{name: "commented out", netperf: "never", files: map[string]string{
			"sources.list": "# deb http://deb.debian.org/debian bookworm main non-free\n"}, added: true},
		{name: "disabled stanza", netperf: "never", files: map[string]string{"sources.list.d/debian.sources": disabled}, added: true},
		{name: "security only", netperf: "never", files: map[string]string{"sources.list.d/security.sources": security}, added: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, except(depsPackages, "netperf"), nil, tc.netperf)
			h.unpacked(t)
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(h.sources, "..", name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := h.run(t, "install-deps.sh")
			wantCode(t, r, 0)
			file := filepath.Join(h.sources, "twnsbench-non-free.sources")
			policy := "apt-cache|policy netperf|"
			if tc.added {
				// A second update fetches the new component.
				wantCalls(t, r, policy, aptUpdate, policy, iperfSeed, aptUpdate, install(depsEnv, "netperf"))
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range []string{"Types: deb", "URIs: http://deb.debian.org/debian", "Components: non-free"} {
					if !strings.Contains(string(b), "\n"+line+"\n") {
						t.Errorf("%s lacks %q:\n%s", file, line, b)
					}
				}
				return
			}
			wantCalls(t, r, policy, aptUpdate, policy, iperfSeed, install(depsEnv, "netperf"))
			wantNoFile(t, file)
			warned := strings.Contains(r.stderr, "non-free is configured but apt has no netperf")
			if want := tc.netperf == "never"; warned != want {
				t.Errorf("warned that netperf may fail: %v, want %v; stderr:\n%s", warned, want, r.stderr)
			}
		})
	}
}

// apt-get update ignores DPkg::Lock::Timeout for its lists lock: the helper
// waits and retries.
func TestInstallDepsWaitsForListsLock(t *testing.T) {
	h := newHost(t, except(depsPackages, "ethtool"), nil, "never")
	h.unpacked(t)
	if err := os.WriteFile(filepath.Join(h.dir, "locked"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run(t, "install-deps.sh")
	wantCode(t, r, 0)
	wantCalls(t, r, iperfSeed, aptUpdate, "sleep|5|", aptUpdate, install(depsEnv, "ethtool"))
}

func TestInstallDepsUpdateFails(t *testing.T) {
	h := newHost(t, except(depsPackages, "ethtool"), nil, "never")
	r := h.run(t, "install-deps.sh", "STUB_UPDATE_FAIL=1")
	if r.code == 0 {
		t.Fatal("exit 0 after a failed apt-get update")
	}
	wantCalls(t, r, iperfSeed, aptUpdate) // and no install
	if !strings.Contains(r.stderr, "apt-get update failed (exit 100)") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// Every package present, the private libreswan unpack not (or only
// partly): it is made, and apt's lists are updated only when the download
// needs them; a download that fails even then fails the script and leaves
// nothing behind.
func TestInstallDepsUnpacksLibreswan(t *testing.T) {
	for _, tc := range []struct {
		name, download string
		partial        bool
		code           int
		calls          []string
	}{
		{name: "fresh lists", calls: lsUnpack},
		{name: "partial unpack", partial: true, calls: lsUnpack},
		{name: "stale lists", download: "after-update", calls: append([]string{lsDownload, aptUpdate}, lsUnpack...)},
		{name: "no package", download: "never", code: 100, calls: []string{lsDownload, aptUpdate, lsDownload}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, depsPackages, nil, "never")
			dir := h.env["TWNSBENCH_LIBRESWAN_DIR"]
			if tc.partial {
				// pluto there, the stamp written last missing: an interrupted unpack.
				h.unpacked(t)
				os.Remove(filepath.Join(dir, ".twnsbench-version"))
				os.WriteFile(filepath.Join(dir, "stale"), nil, 0o644)
			}
			r := h.run(t, "install-deps.sh", "STUB_DOWNLOAD="+tc.download)
			wantCode(t, r, tc.code)
			wantCalls(t, r, tc.calls...)
			if tc.code != 0 {
				wantNoFile(t, dir)
				wantNoTemp(t, h)
				return
			}
			wantUnpacked(t, h)
			wantNoFile(t, filepath.Join(dir, "stale"))
			// Run again: nothing to do, no apt at all.
			h2 := *h
			h2.env = map[string]string{}
			for k, v := range h.env {
				h2.env[k] = v
			}
			h2.env["STUB_LOG"] = filepath.Join(h.dir, "calls-again.log")
			r = h2.run(t, "install-deps.sh", "STUB_DOWNLOAD="+tc.download)
			wantCode(t, r, 0)
			wantCalls(t, r)
			if r.stdout != "install-deps.sh: all packages present\n" {
				t.Errorf("second run: stdout %q", r.stdout)
			}
		})
	}
}

// The bug: prepare.sh stopped before installing anything when a package was
// missing (dpkg-query -W exits 1 then, and pipefail + set -e ended it).
func TestPrepareFreshMachine(t *testing.T) {
	missing := []string{"qemu-system-x86", "linux-image-amd64", "busybox-static"}
	h := newHost(t, except(vmPackages, missing...), nil, "never")
	r := h.run(t, "vmtest/prepare.sh", "VMTEST_PACKAGES_ONLY=1")
	wantCode(t, r, 0)
	wantCalls(t, r, aptUpdate, install("INITRD=No DEBIAN_FRONTEND=noninteractive", missing...))
	if r.stdout != "" {
		t.Errorf("stdout %q: callers eval it", r.stdout)
	}
}

func TestPrepareNoneInstalled(t *testing.T) {
	h := newHost(t, nil, []string{"busybox-static"}, "never")
	r := h.run(t, "vmtest/prepare.sh", "VMTEST_PACKAGES_ONLY=1")
	wantCode(t, r, 0)
	wantCalls(t, r, aptUpdate, install("INITRD=No DEBIAN_FRONTEND=noninteractive", vmPackages...))
	if r.stdout != "" {
		t.Errorf("stdout %q: callers eval it", r.stdout)
	}
}

func TestPrepareAllInstalled(t *testing.T) {
	h := newHost(t, vmPackages, nil, "never")
	r := h.run(t, "vmtest/prepare.sh", "VMTEST_PACKAGES_ONLY=1")
	wantCode(t, r, 0)
	wantCalls(t, r)
	if r.stdout != "" {
		t.Errorf("stdout %q", r.stdout)
	}
}

// Without VMTEST_PACKAGES_ONLY the script goes on past the install; the
// stubs did not really install the kernel, so it stops at the kernel step
// with a message (and still nothing on stdout).
func TestPrepareInstallsBeforeKernelStep(t *testing.T) {
	missing := []string{"qemu-system-x86", "linux-image-amd64"}
	h := newHost(t, except(vmPackages, missing...), nil, "never")
	r := h.run(t, "vmtest/prepare.sh")
	wantCode(t, r, 1)
	wantCalls(t, r, aptUpdate, install("INITRD=No DEBIAN_FRONTEND=noninteractive", missing...))
	if !strings.Contains(r.stderr, "vmtest: linux-image-amd64 is not installed") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q", r.stdout)
	}
	wantNoFile(t, h.env["VMTEST_CACHE"])
}

// install-relay-tools.sh with a stub go whose xray prints its version in
// several writes: `xray version | head -n 1` then died of SIGPIPE, and
// pipefail failed the script after both builds.
func TestInstallRelayTools(t *testing.T) {
	h := newHost(t, nil, nil, "never")
	bin := filepath.Join(h.dir, "bin")
	goStub := stubLog + `log go "$*" "GOBIN=$GOBIN"
# go version -m BIN: the build info the stub binaries carry as "# mod" lines.
if [ "$1 $2" = "version -m" ]; then
	echo "$3: go1.26.8"
	sed -n 's/^# mod /\tmod\t/p' "$3"
	exit 0
fi
# go mod download -json MODULE@VERSION: the stub's hash of every module.
if [ "$1 $2 $3" = "mod download -json" ]; then
	printf '{\n\t"Path": "%s",\n\t"Sum": "h1:stub="\n}\n' "${4%@*}"
	exit 0
fi
[ "$1" = install ] || exit 2
ver=${2##*@}
case $2 in
*/cmd/caddy@*) printf '#!/bin/sh\n# mod github.com/caddyserver/caddy/v2 %s\nprintf "path\\tgithub.com/caddyserver/caddy/v2/cmd/caddy\\nmod\\tgithub.com/caddyserver/caddy/v2\\t%s\\th1:x=\\n"\n' "$ver" "$ver" >"$GOBIN/caddy" ;;
*/xray-core/main@*) printf '#!/bin/sh\n# mod github.com/xtls/xray-core %s\necho "Xray %s (stub)"\nsleep 0.2\necho "A unified platform"\necho more\n' "$ver" "${ver#v}" >"$GOBIN/main" ;;
*) exit 2 ;;
esac
chmod +x "$GOBIN"/*
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/bash\n"+goStub), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bin, "sleep")); err != nil { // the xray stub needs a real sleep
		t.Fatal(err)
	}
	out := filepath.Join(h.dir, "relay")
	r := h.runArgs(t, "install-relay-tools.sh", []string{out}, "CADDY_VERSION=v2.99.1", "XRAY_VERSION=v1.2.3", "XRAY_SUM=h1:stub=")
	wantCode(t, r, 0)
	var builds []string
	for _, c := range r.calls {
		args, env, _ := strings.Cut(strings.TrimPrefix(c, "go|"), "|GOBIN=")
		if strings.HasPrefix(args, "install ") && (env == "" || strings.HasPrefix(env, out)) {
			t.Errorf("go call %q: want GOBIN set to a build dir outside %s", c, out)
		}
		builds = append(builds, args)
	}
	if want := []string{
		"install github.com/caddyserver/caddy/v2/cmd/caddy@v2.99.1",
		"mod download -json github.com/xtls/xray-core@v1.2.3",
		"install github.com/xtls/xray-core/main@v1.2.3",
	}; !reflect.DeepEqual(builds, want) {
		t.Errorf("go calls %q, want %q", builds, want)
	}
	want := "install-relay-tools: caddy v2.99.1 -> " + out + "/caddy\n" +
		"install-relay-tools: xray v1.2.3 -> " + out + "/xray\n" +
		"Caddy v2.99.1\n" +
		"Xray 1.2.3 (stub)\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	for _, name := range []string{"caddy", "xray"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s/%s not installed executable: %v", out, name, err)
		}
	}

	// A second run (CI's cached directory) keeps both: nothing is built.
	if err := os.WriteFile(h.env["STUB_LOG"], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.runArgs(t, "install-relay-tools.sh", []string{out}, "CADDY_VERSION=v2.99.1", "XRAY_VERSION=v1.2.3", "XRAY_SUM=h1:stub=")
	wantCode(t, r, 0)
	for _, c := range r.calls {
		if strings.HasPrefix(c, "go|install ") {
			t.Errorf("second run built again: %q", c)
		}
	}
	if want := "install-relay-tools: caddy v2.99.1 already in " + out + "/caddy\n" +
		"install-relay-tools: xray v1.2.3 already in " + out + "/xray\n" +
		"Caddy v2.99.1\n" +
		"Xray 1.2.3 (stub)\n"; r.stdout != want {
		t.Errorf("second run stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	// Xray whose hash is not the pinned one is refused, and not installed.
	r = h.runArgs(t, "install-relay-tools.sh", []string{out}, "CADDY_VERSION=v2.99.1", "XRAY_VERSION=v1.2.4", "XRAY_SUM=h1:other=")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "github.com/xtls/xray-core@v1.2.4 has hash h1:stub=, want h1:other=") {
		t.Errorf("a wrong hash: stderr %q", r.stderr)
	}
	for _, c := range r.calls {
		if strings.HasPrefix(c, "go|install ") {
			t.Errorf("built despite the wrong hash: %q", c)
		}
	}
	// Another pinned version is built.
	r = h.runArgs(t, "install-relay-tools.sh", []string{out}, "CADDY_VERSION=v2.99.2", "XRAY_VERSION=v1.2.3", "XRAY_SUM=h1:stub=")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "caddy v2.99.2 -> ") || !strings.Contains(r.stdout, "xray v1.2.3 already in") {
		t.Errorf("a new caddy pin: stdout:\n%s", r.stdout)
	}
}

// install-test-deps.sh installs Chromium for the browser test, with
// apt updated first, only when it is missing (a package removed with its
// config files left counts as missing).
func TestInstallTestDeps(t *testing.T) {
	for _, c := range []struct {
		name                   string
		installed, configFiles []string
	}{
		{"none installed", nil, nil},
		{"config files only", nil, []string{"chromium"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, c.installed, c.configFiles, "never")
			r := h.run(t, "install-test-deps.sh")
			wantCode(t, r, 0)
			wantCalls(t, r, aptUpdate, install(depsEnv, "chromium"))
			if !strings.Contains(r.stdout, "install-test-deps.sh: installing chromium\n") {
				t.Errorf("stdout does not name the package:\n%s", r.stdout)
			}
		})
	}
}

func TestInstallTestDepsAllInstalled(t *testing.T) {
	h := newHost(t, []string{"chromium"}, nil, "never")
	r := h.run(t, "install-test-deps.sh")
	wantCode(t, r, 0)
	wantCalls(t, r) // no apt at all
	if r.stdout != "install-test-deps.sh: all packages present\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestInstallTestDepsNeedsRoot(t *testing.T) {
	h := newHost(t, nil, nil, "never")
	if err := os.WriteFile(filepath.Join(h.dir, "bin", "id"), []byte("#!/bin/sh\necho 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.run(t, "install-test-deps.sh")
	wantCode(t, r, 2)
	wantCalls(t, r)
	if !strings.Contains(r.stderr, "must run as root") {
		t.Errorf("stderr %q", r.stderr)
	}
}
