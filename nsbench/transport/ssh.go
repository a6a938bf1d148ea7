package transport

import (
	"context"

	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// SSH is the reference's ceiling: the instruments go straight across the
// bridge to the server's address (scp through one OpenSSH connection).
type SSH struct{}

var _ Transport = SSH{}

var sshSpec = Spec{
	Name:      "ssh",
	Summary:   "Pure SSH: the instruments straight to the server's fixtures (the no-tunnel baseline)",
	InDefault: true,
	Plain:     true,
	Sets:      []string{"seed-002"},
	New:       func(Config) (Transport, error) { return SSH{}, nil },
}

func (SSH) Name() string  { return "ssh" }
func (SSH) Label() string { return "Pure SSH" }
func (SSH) Check() error  { return nil }
func (SSH) About() string {
	return "is the ceiling: one OpenSSH connection straight from the server's namespace to the client's."
}

func (SSH) Up(ctx context.Context, tb *Testbed) (*Path, error) {
	return &Path{
		Target: DirectTarget(tb.Roles[topology.Server].Addr().String()),
		Close:  func() error { return nil },
	}, nil
}

// DirectTarget aims at the fixtures' own ports on host, over a path that
// carries packets.
func DirectTarget(host string) Target {
	return Target{Host: host, Ports: FixturePorts(), Carries: CarriesPackets}
}
