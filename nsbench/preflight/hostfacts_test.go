package preflight_test

import (
	"context"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

func TestMain(m *testing.M) { nstest.Main(m) }

// A machine's NIC (a veth standing for it) read in the machine's own
// namespace: its driver, MTU and offloads, and the host's kernel and cores.
func TestReadHostNIC(t *testing.T) {
	ms := nstest.Machines(t, nstest.Prefix(t), netip.MustParsePrefix("10.227.0.0/24"))
	var h results.Host
	err := ms[0].NS.Do(func() (err error) {
		h, err = preflight.ReadHost(nstest.MachineNIC, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A veth's speed is a constant of its driver: absent.
	if h.Iface != nstest.MachineNIC || h.Driver != "veth" || h.MTU != 1500 || h.Kernel == "" || h.Cores <= 0 || h.SpeedMbps != 0 {
		t.Errorf("facts %+v", h)
	}
	// A veth's offloads are the kernel's defaults: at least gso is on.
	if !strings.Contains(h.Offloads, "gso") {
		t.Errorf("offloads %q", h.Offloads)
	}
}

// The facts cross the wire from a host's copy: what was read arrives even
// when something could not be (lo has no driver), and the error names it.
func TestHostFactsOverTheWire(t *testing.T) {
	nstest.RequireRoot(t)
	toAgent, fromOrch := io.Pipe()
	toOrch, fromAgent := io.Pipe()
	go func() {
		role.Agent(context.Background(), toAgent, fromAgent, role.AgentConfig{})
		fromAgent.Close()
	}()
	defer fromOrch.Close()
	c := role.NewWire("test host", toOrch, fromOrch)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := preflight.HostFacts(ctx, c, "lo", []preflight.Tool{{Name: "no-such-tool", Args: []string{"-V"}}})
	if err == nil || !strings.Contains(err.Error(), "lo driver") {
		t.Errorf("err %v, want one naming lo's driver", err)
	}
	if h.Iface != "lo" || h.MTU != 65536 || h.Kernel == "" || h.Cores <= 0 || h.Driver != "" || h.SpeedMbps != 0 || h.Tools != nil {
		t.Errorf("facts %+v", h)
	}
}
