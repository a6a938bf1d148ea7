package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The WireGuard prose follows the implementation the document names: kernel
// WireGuard's CPU is visible only host-wide and it has no process; a
// userspace one's CPU is in the roles' cgroups and its daemons have RSS.
func TestWireGuardProseFollowsImplementation(t *testing.T) {
	doc := func(impl string, rss map[string]int64) *results.Document {
		d := twnsbenchDoc()
		d.Env.WireGuard = impl
		d.Skipped = nil
		d.Samples = append(d.Samples, results.Sample{Transport: "wireguard", Condition: "lan", Instrument: instIperf1,
			Run: 1, WallSec: 10, Value: 2.4, Unit: "Gbit/s", HostCPUSec: 20,
			ContainerCPUSec: map[string]float64{"client": 8, "server": 7}})
		d.RSS = append(d.RSS, results.RSS{Transport: "wireguard", PeakKB: rss})
		return d
	}
	kernel := string(Markdown(doc("kernel module 1.0.0", map[string]int64{"kernel (no userspace process)": 0})))
	user := string(Markdown(doc("wireguard-go v0.0.0-20260522210424-ecfc5a8d5446 (userspace; kernel module unavailable)",
		map[string]int64{"client / wireguard-go": 58624, "server / wireguard-go": 60000})))

	for _, want := range []string{
		"its CPU shows up only in the host-wide CPU-seconds",
		"Kernel WireGuard has no userspace process: its footprint is kernel memory, reported as 0.",
		"| SSH over WireGuard | kernel (no userspace process) | 0.0 MiB |",
	} {
		if !strings.Contains(kernel, want) {
			t.Errorf("kernel report lacks %q", want)
		}
	}
	for _, want := range []string{
		"here wireguard-go v0.0.0-20260522210424-ecfc5a8d5446 (userspace; kernel module unavailable): one wireguard-go process per namespace, in its role's cgroup",
		"WireGuard ran as wireguard-go (userspace): its rows are the two daemons' own peaks.",
		"| SSH over WireGuard | client / wireguard-go | 57.2 MiB |",
	} {
		if !strings.Contains(user, want) {
			t.Errorf("userspace report lacks %q", want)
		}
	}
	for _, wrong := range []string{"never in a role's cgroup", "Kernel WireGuard has no userspace process"} {
		if strings.Contains(user, wrong) {
			t.Errorf("userspace report says %q", wrong)
		}
	}
}
