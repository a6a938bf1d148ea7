package main

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
)

// helpSection returns the lines of a --help output from the one starting
// with heading up to the next heading (a line without indent).
func helpSection(help, heading string) string {
	_, after, ok := strings.Cut(help, "\n"+heading)
	if !ok {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(after, "\n")[1:] {
		if l != "" && !strings.HasPrefix(l, " ") {
			break
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// flagLine returns the --help line of flag name.
func flagLine(help, name string) string {
	for _, l := range strings.Split(help, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--"+name+" ") {
			return l
		}
	}
	return ""
}

// run --help's description names every instrument a run measures by
// default, from the registry (it once named 4 of 8), and --instruments
// names each set with its members.
func TestRunHelpNamesTheInstruments(t *testing.T) {
	code, help, stderr := runInProcess("run", "--help")
	if code != exitOK {
		t.Fatalf("run --help: exit %d: %s", code, stderr)
	}
	desc := helpSection(help, "DESCRIPTION:")
	if desc == "" {
		t.Fatalf("run --help has no description:\n%s", help)
	}
	want := append(strings.Split(instrumentList(instrument.All()), ", "), instrument.Ready)
	if len(want) < 8 {
		t.Fatalf("the default instruments are %v: want at least 8", want)
	}
	for _, name := range want {
		if !strings.Contains(desc, name) {
			t.Errorf("run --help's description does not name the default instrument %s:\n%s", name, desc)
		}
	}
	line := flagLine(help, "instruments")
	for set, members := range instrument.Sets {
		for _, in := range members() {
			if !strings.Contains(line, in.Name()) {
				t.Errorf("--instruments does not name %s of the set %s: %s", in.Name(), set, line)
			}
		}
		if !strings.Contains(line, set+":") {
			t.Errorf("--instruments does not name the set %s: %s", set, line)
		}
	}
}

// run's --host usage shows the addr= run requires and ROLE=local; doctor's
// and clean's do not require it. An entry written as run's usage says
// parses with its address.
func TestHostUsageShowsAddr(t *testing.T) {
	for _, c := range []struct {
		cmd      string
		required bool
	}{{"run", true}, {"doctor", false}, {"clean", false}} {
		code, help, stderr := runInProcess(c.cmd, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d: %s", c.cmd, code, stderr)
		}
		line := flagLine(help, "host")
		if !strings.Contains(line, "ROLE=USER@HOST[:PORT][,iface=NAME]") {
			t.Errorf("%s --host usage lacks the entry syntax: %s", c.cmd, line)
		}
		for _, want := range []string{",addr=A.B.C.D/NN", "ROLE=local[,iface=NAME],addr=A.B.C.D/NN", "addr= is required"} {
			if got := strings.Contains(line, want); got != c.required {
				t.Errorf("%s --host usage: contains %q is %v, want %v: %s", c.cmd, want, got, c.required, line)
			}
		}
	}
	for entry, local := range map[string]bool{
		"client=root@10.0.0.2:2222,iface=eth1,addr=10.0.0.50/24": false,
		"server=local,iface=eth1,addr=10.0.0.51/24":              true,
	} {
		h, err := hosts.ParseHost(entry)
		if err != nil {
			t.Errorf("%s, written as run's usage says: %v", entry, err)
			continue
		}
		if !h.RoleAddr.IsValid() || h.Local != local || h.Iface != "eth1" {
			t.Errorf("%s parsed as %+v", entry, h)
		}
	}
}

// The command's own help names --host beside this host and every
// instrument a run measures by default, from the registry; run's
// description names --host too.
func TestAppHelpNamesHostsAndInstruments(t *testing.T) {
	code, help, stderr := runInProcess("--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d: %s", code, stderr)
	}
	name := helpSection("\n"+help, "NAME:") // the first heading
	desc := helpSection(help, "DESCRIPTION:")
	if !strings.Contains(name, "--host") || !strings.Contains(desc, "--host") {
		t.Errorf("twnsbench --help does not name --host in its usage and description:\n%s", help)
	}
	for _, in := range append(strings.Split(instrumentList(instrument.All()), ", "), instrument.Ready) {
		if !strings.Contains(desc, in) {
			t.Errorf("twnsbench --help's description does not name the default instrument %s:\n%s", in, desc)
		}
	}
	code, help, stderr = runInProcess("run", "--help")
	if code != exitOK {
		t.Fatalf("run --help: exit %d: %s", code, stderr)
	}
	if !strings.Contains(helpSection(help, "DESCRIPTION:"), "--host") {
		t.Errorf("run --help's description does not name --host:\n%s", help)
	}
}
