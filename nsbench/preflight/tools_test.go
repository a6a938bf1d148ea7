package preflight

import (
	"maps"
	"os"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct{ file, tool, want string }{
		{"iperf3-version.txt", "iperf3", "iperf 3.12 (cJSON 1.7.15)"},
		{"netperf-V.txt", "netperf", "Netperf version 2.7.0"},
		{"netserver-V.txt", "netserver", "Netperf version 2.7.0"},
		{"ssh-V.txt", "ssh", "OpenSSH_9.2p1 Debian-2+deb12u10, OpenSSL 3.0.19 27 Jan 2026"},
		{"sshd-V.txt", "sshd", "OpenSSH_9.2, OpenSSL 3.0.19 27 Jan 2026"},
		// Hand-made after OpenSSH 8.4's usage(): no -V, version inside the usage text.
		{"sshd-V-old.txt", "sshd", "OpenSSH_8.4p1 Debian-5+deb11u3, OpenSSL 1.1.1w  11 Sep 2023"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseVersion(string(b), tools[tt.tool].Prefix)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("version = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseVersionNoMatch(t *testing.T) {
	_, err := parseVersion("sshd: illegal option\nusage: whatever\n", "OpenSSH")
	want := `no version line starting "OpenSSH" in "sshd: illegal option"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// TestToolVersionsInstalled asks each installed tool; a tool that is not
// installed is skipped, not failed.
func TestToolVersionsInstalled(t *testing.T) {
	names := []string{"iperf3", "netperf", "netserver", "ssh", "scp", "ssh-keygen", "sshd"}
	var ts []Tool
	for _, name := range names {
		ts = append(ts, harnessTool(name))
	}
	got := ToolVersions(ts)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if _, err := lookTool(name); err != nil {
				t.Skipf("%s not installed: %v", name, err)
			}
			v, ok := got[name]
			if !ok {
				t.Fatalf("no version for installed %s", name)
			}
			prefix := tools[name].Prefix
			if sib := tools[name].Sibling; sib != "" {
				prefix = tools[sib].Prefix
			}
			if !strings.HasPrefix(v, prefix) {
				t.Errorf("version %q does not start with %q", v, prefix)
			}
		})
	}
	if _, err := lookTool("ssh"); err == nil && got["scp"] != "" && got["scp"] != got["ssh"] {
		t.Errorf("scp version %q, want ssh's %q", got["scp"], got["ssh"])
	}
}

// TestToolVersionsStated: a tool the harness does not know (a
// transport's) is asked by the flag it states; a name that is a path is
// never run.
func TestToolVersionsStated(t *testing.T) {
	say := []string{"-c", "echo sh 1.0 from its flag"}
	got := ToolVersions([]Tool{{Name: "sh", Args: say, Prefix: "sh "}, {Name: "/bin/sh", Args: say, Prefix: "sh "},
		{Name: "sh-twnsbench-absent", Args: say, Prefix: "sh "}})
	if want := map[string]string{"sh": "sh 1.0 from its flag"}; !maps.Equal(got, want) {
		t.Errorf("versions %q, want %q", got, want)
	}
}

// TestLookToolSbin: sudo's PATH may lack the sbin directories; sshd is
// found there anyway.
func TestLookToolSbin(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	path, err := lookTool("sshd")
	if err != nil {
		t.Skipf("sshd not installed in %v: %v", sbinDirs, err)
	}
	if !strings.HasSuffix(path, "/sbin/sshd") {
		t.Errorf("sshd at %s, want one of %v", path, sbinDirs)
	}
}

func TestCheckToolMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // netperf lives in /usr/bin, not in an sbin directory
	tests := []struct {
		name string
		want Check
	}{
		{"netperf", Check{
			Name:     "netperf",
			Required: true,
			Detail:   "netperf not found in PATH or /usr/local/sbin, /usr/sbin, /sbin (Debian package netperf, in Debian's non-free component)",
			Fix:      "sudo scripts/install-deps.sh",
		}},
		{"twnsbench-no-such-tool", Check{
			Name:     "twnsbench-no-such-tool",
			Required: true,
			Detail:   "twnsbench-no-such-tool not found in PATH or /usr/local/sbin, /usr/sbin, /sbin (Debian package twnsbench-no-such-tool?)",
			Fix:      "sudo apt-get install --no-install-recommends twnsbench-no-such-tool",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, v := checkTool(tt.name)
			if got != tt.want || v != "" {
				t.Errorf("checkTool = %+v, %q\nwant        %+v", got, v, tt.want)
			}
		})
	}
}
