package nsbench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// A transport whose own CPU cannot be attributed — the plain path has no
// tunnel, a kernel tunnel does its work in no process — gets no transport
// CPU figure, whatever its empty cgroups read, and the sample says why; a
// userspace tunnel keeps its figure. A kernel tunnel's memory entry names
// the kernel part instead of a 0.
func TestRecorderOwnCPUAttribution(t *testing.T) {
	rc := newRecorder(&results.Document{Timings: &results.Timings{}}, "")
	kernelWG := &transport.WireGuard{}
	userspace := fakeTransport{"openvpn-tls"}
	for _, tr := range []transport.Transport{transport.SSH{}, kernelWG, userspace} {
		rc.transport(tr)
	}
	rc.path(kernelWG, &transport.Path{InKernel: "kernel WireGuard"})
	rc.path(userspace, &transport.Path{})
	zero := map[string]float64{"client": 0, "server": 0}
	for _, name := range []string{"ssh", "wireguard", "openvpn-tls"} {
		rc.sample(results.Sample{Transport: name, Instrument: "iperf3-1", TransportCPUSec: zero}, 0)
	}
	want := map[string]string{
		"ssh":         "no tunnel",
		"wireguard":   "kernel WireGuard: in the kernel, not attributable per transport — see host CPU",
		"openvpn-tls": "",
	}
	for _, s := range rc.doc.Samples {
		w := want[s.Transport]
		if w == "" {
			if s.TransportCPUSec == nil || s.TransportCPUAbsent != "" {
				t.Errorf("%s: transport CPU %v (%q): want the measured figure kept", s.Transport, s.TransportCPUSec, s.TransportCPUAbsent)
			}
			continue
		}
		if s.TransportCPUSec != nil || !strings.Contains(s.TransportCPUAbsent, w) {
			t.Errorf("%s: transport CPU %v (%q): want none, and %q", s.Transport, s.TransportCPUSec, s.TransportCPUAbsent, w)
		}
	}
	rc.rss(results.RSS{Transport: "wireguard", PeakKB: map[string]int64{}})
	if got := rc.doc.RSS[0]; got.InKernel != "kernel WireGuard" || len(got.PeakKB) != 0 {
		t.Errorf("kernel tunnel's memory entry %+v: want no figure and the kernel part named", got)
	}
}

// fakeTransport is a transport that is only a name: the recorder needs no more.
type fakeTransport struct{ name string }

func (f fakeTransport) Name() string  { return f.name }
func (f fakeTransport) Label() string { return f.name }
func (f fakeTransport) About() string { return "" }
func (f fakeTransport) Check() error  { return nil }
func (f fakeTransport) Up(context.Context, *transport.Testbed) (*transport.Path, error) {
	return nil, errors.New("a fake transport builds nothing")
}

// The machines' role links are the Environment's where they agree; where
// they differ it says per host and each host keeps its own; every global
// sysctl any machine changed is named once.
func TestRecorderMachinesLinks(t *testing.T) {
	host := func(login, offloads, cc string, changes ...string) results.Host {
		return results.Host{Login: login, Roles: []string{login}, RoleLinks: &results.RoleLinks{Offloads: offloads, Congestion: cc, SysctlChanges: changes}}
	}
	for _, c := range []struct {
		hosts              []results.Host
		offloads, cc, note string
		changes            []string
	}{
		{[]results.Host{host("local", "off", "bbr")}, "off", "bbr", "", nil},
		{[]results.Host{host("a", "off", "cubic", "x"), host("b", "off", "cubic", "x")}, "off", "cubic", "set as", []string{"x"}},
		{[]results.Host{host("a", "own", "cubic", "x"), host("b", "off", "reno", "y")}, "per host (Hosts)", "per host (Hosts)", "set as", []string{"x", "y"}},
		{[]results.Host{host("a", "off", "cubic"), {Login: "b"}}, "", "", "", nil}, // a machine's links unknown: not claimed
	} {
		rc := newRecorder(&results.Document{Timings: &results.Timings{}}, "")
		rc.setup.machines(c.hosts)
		e := rc.doc.Env
		if e.Offloads != c.offloads || e.Congestion != c.cc || !strings.HasPrefix(e.CongestionNote, c.note) ||
			strings.Join(e.SysctlChanges, ",") != strings.Join(c.changes, ",") || len(e.Hosts) != len(c.hosts) {
			t.Errorf("%+v: env offloads %q congestion %q note %q changes %v hosts %d", c.hosts, e.Offloads, e.Congestion, e.CongestionNote, e.SysctlChanges, len(e.Hosts))
		}
	}
}
