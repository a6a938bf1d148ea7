package report

import (
	"cmp"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The report says of each measured transport what the transport says of
// itself (results' transports[].about), under its label, and nothing of a
// transport without samples; a kernel implementation's memory is not
// attributable — a dash and a footnote, never 0 — in a document of
// either form (in_kernel, or the older "kernel (no userspace process)": 0).
func TestTransportProseFromDocument(t *testing.T) {
	d := twnsbenchDoc()
	d.Skipped = nil
	d.Transports = append(d.Transports, results.Transport{Name: "unmeasured", Label: "Never ran", About: "is never described."})
	for i := range d.Transports {
		if d.Transports[i].Name == "wireguard" {
			d.Transports[i].About = "is a test sentence about kernel WireGuard."
		}
	}
	d.Samples = append(d.Samples, results.Sample{Transport: "wireguard", Condition: "lan", Instrument: instIperf1,
		Run: 1, WallSec: 10, Value: 2.4, Unit: "Gbit/s", HostCPUSec: 20,
		RoleCPUSec: map[string]float64{"client": 8, "server": 7}})
	for _, rss := range []results.RSS{
		{Transport: "wireguard", PeakKB: map[string]int64{}, InKernel: "kernel WireGuard"},
		{Transport: "wireguard", PeakKB: map[string]int64{"kernel (no userspace process)": 0}},
	} {
		d.RSS = append(d.RSS, rss)
		md := string(Markdown(d))
		for _, want := range []string{
			"- **SSH over WireGuard** is a test sentence about kernel WireGuard.",
			"| SSH over WireGuard | kernel: " + cmp.Or(rss.InKernel, "kernel") + " | — ‡ | — ‡ |",
			"‡ In the kernel, not attributable per transport: the tunnel state of SSH over WireGuard (" + cmp.Or(rss.InKernel, "kernel") + ")",
		} {
			if !strings.Contains(md, want) {
				t.Errorf("report lacks %q", want)
			}
		}
		if strings.Contains(md, " 0.0 MiB") {
			t.Error("a kernel tunnel's memory rendered as 0.0 MiB")
		}
		if strings.Contains(md, "never described") {
			t.Error("the report describes a transport that measured nothing")
		}
		d.RSS = d.RSS[:len(d.RSS)-1]
		if strings.Contains(string(Markdown(d)), "not attributable per transport") {
			t.Error("the not-attributable note without a kernel row")
		}
	}
}
