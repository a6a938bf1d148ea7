package fanout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Shape is what an N-client testbed is built to: N clients beside the
// server, the relay when the transport has one, and the condition the
// clients' paths come up under.
type Shape struct {
	Clients int
	Relay   bool
	// Condition is a WAN condition's name (Plan.Conditions), set on the
	// bed before the paths come up; "" is the LAN.
	Condition string
}

// Spec is the shape's topology (Spec).
func (s Shape) Spec(prefix string) topology.Spec { return Spec(prefix, s.Clients, s.Relay) }

// Bed is an N-client testbed as the sweep stands on it. Its builder
// (UpBed) is the run's testbed code: the private directory, the log
// directory, the roles and their cgroups, the server fixtures.
type Bed interface {
	// View is the testbed as a transport sees it, the roles' processes
	// in their base leaf.
	View() *transport.Testbed
	// OnTeardown pushes fn onto the teardown: Down runs it before
	// everything pushed earlier.
	OnTeardown(name string, fn func(context.Context) error)
	// Down tears everything down, newest first, under a fresh context
	// with a deadline, and returns every error.
	Down() error
	// Residue names what of the testbed is still there after Down, of
	// every kind a run creates; it must be empty.
	Residue() []string
	// Impaired is the WAN condition the bed was built under, already set;
	// nil on the LAN.
	Impaired() Impaired
}

// Impaired is a bed's WAN condition: every client's path crosses the same
// emulated WAN to the server. Its clear is on the bed's teardown.
type Impaired interface {
	// Probe measures the condition from every client, once their paths
	// are up and before the load.
	Probe(ctx context.Context, clients []string)
	// Verify reads the impairment after the load and returns the
	// condition as measured, judged against what the row's clients
	// received together (a rate cap).
	Verify(ctx context.Context, row results.ClientsRow) *results.ClientsWAN
}

// UpBed builds an N-client testbed of shape s up to its server fixtures.
// On failure it has torn down what it built.
type UpBed func(ctx context.Context, s Shape) (Bed, error)

// startIPerf3 starts one iperf3 server per client in the server role's
// own leaf, apart from the transport's, and waits until all listen. Their
// stop is on b's teardown.
func startIPerf3(ctx context.Context, b Bed, n int) error {
	srv, err := b.View().Roles[topology.Server].Leaf(ctx, "iperf3-fan")
	if err != nil {
		return err
	}
	var ps []*proc.Process
	b.OnTeardown("iperf3 servers", func(context.Context) error {
		var errs []error
		for _, p := range ps {
			errs = append(errs, p.Stop(3*time.Second))
		}
		return errors.Join(errs...)
	})
	for i := range n {
		p, err := srv.Start(ctx, srv.Program("iperf3-"+strconv.Itoa(i+1), "iperf3", "-s", "-p", strconv.Itoa(transport.FanPort(i))))
		if err != nil {
			return fmt.Errorf("iperf3 server %d: %w", i+1, err)
		}
		ps = append(ps, p)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return proc.WaitUntil(wctx, fmt.Sprintf("%d iperf3 servers listening", n), func() error {
		st, err := role.TCP(wctx, srv)
		if err != nil {
			return err
		}
		for i, p := range ps {
			if !metrics.Listening(st.Sockets, transport.FanPort(i)) {
				select {
				case <-p.Done():
					return fmt.Errorf("iperf3 server %d (pid %d) exited: %v", i+1, p.PID(), p.Err())
				default:
				}
				return fmt.Errorf("iperf3 server %d not listening yet", i+1)
			}
		}
		return nil
	}, nil)
}

// forTransport is the bed's view with every role's processes in the
// transport's own leaf.
func forTransport(ctx context.Context, b Bed, name string) (*transport.Testbed, error) {
	roles, err := role.ForTransport(ctx, b.View().Roles, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	v := *b.View()
	v.Roles = roles
	return &v, nil
}
