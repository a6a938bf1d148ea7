// Package fanout measures many clients on one server: for each
// transport and each client count N, it builds N client namespaces beside
// the one server, gives every client its own path through the transport
// (transport.Fanner), loads them all at once with one iperf3 stream each,
// and records each client's share, the server's CPU and peak memory, and
// how long the N clients took to set up and to tear down. It writes the
// results (results.Clients); only the report package renders them.
//
// Every N gets a testbed of its own, built in this order and torn down in
// reverse, newest first; its caller's UpBed (the run's testbed code,
// nsbench) builds it up to the fixtures, and fanout adds the rest:
//
//	private directory → topology (server, client, client2 … clientN) →
//	cgroups → fixtures (sshd: the clients' key) → N iperf3 servers →
//	the transport's paths (Fanner.FanUp)
package fanout

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Plan is a validated sweep.
type Plan struct {
	Counts   []int // client counts, ascending, each in [1, transport.MaxFanClients]
	Duration time.Duration
	OutDir   string
	// Runs is how many times the whole sweep runs (run --clients --runs);
	// 0 or 1: once.
	Runs int
	// Alternate measures count by count, the transports in alternating
	// order (runOrder): for builds of one transport side by side.
	Alternate bool
	// Conditions are the conditions every transport and count is measured
	// under, in order: "" the LAN, else a WAN condition's name
	// (Shape.Condition); none is the LAN alone.
	Conditions []string
	// Checked says the transports were checked where their roles run (on
	// other hosts, by their agents): Run does not check them here.
	Checked bool
}

// conditions are the plan's conditions, the LAN alone when none is given.
func (p Plan) conditions() []string {
	if len(p.Conditions) == 0 {
		return []string{""}
	}
	return p.Conditions
}

// ParseCounts reads --clients: a comma-separated list of client counts,
// each from 1 to transport.MaxFanClients, none twice. The counts come
// back ascending.
func ParseCounts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--clients: empty list (want counts such as 1,2,4,8)")
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("--clients: %q is not a client count (want counts such as 1,2,4,8)", f)
		}
		out = append(out, n)
	}
	if err := CheckCounts(out); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// CheckCounts refuses client counts out of [1, transport.MaxFanClients],
// none given, or one given twice.
func CheckCounts(counts []int) error {
	if len(counts) == 0 {
		return fmt.Errorf("--clients: empty list (want counts such as 1,2,4,8)")
	}
	for i, n := range counts {
		if n < 1 || n > transport.MaxFanClients {
			return fmt.Errorf("--clients: %d is out of range (1 to %d clients)", n, transport.MaxFanClients)
		}
		if slices.Contains(counts[:i], n) {
			return fmt.Errorf("--clients: %d is given twice", n)
		}
	}
	return nil
}

// CheckDuration refuses a stream duration that iperf3 cannot run as
// given: its -t takes whole seconds (3.12 reads it with atoi, so 2.5
// would silently be 2), and one second at least.
func CheckDuration(d time.Duration) error {
	if d < time.Second || d%time.Second != 0 {
		return fmt.Errorf("--duration %s: want whole seconds, at least 1s (iperf3's -t takes whole seconds)", d)
	}
	return nil
}

// ClientRoles are the client roles of an N-client testbed: "client",
// then "client2" … "clientN" (the first keeps the reference's name, so
// the fixtures' client key is made there).
func ClientRoles(n int) []string {
	roles := []string{topology.Client}
	for i := 2; i <= n; i++ {
		roles = append(roles, topology.Client+strconv.Itoa(i))
	}
	return roles
}

// Spec is the topology of an N-client testbed: the server first (.2),
// then the clients (.3 …), then the relay when the transport has one, in
// the reference's subnet, with its fairness settings.
func Spec(prefix string, n int, withRelay bool) topology.Spec {
	s := topology.DefaultSpec(prefix)
	s.Roles = append([]string{topology.Server}, ClientRoles(n)...)
	if withRelay {
		s.Roles = append(s.Roles, topology.Relay)
	} else {
		s.HostNames = nil
	}
	return s
}

// splitHostPort splits a target for iperf3's -c and -p.
func splitHostPort(target string) (string, string, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return "", "", fmt.Errorf("target %q: %w", target, err)
	}
	return host, port, nil
}

// Check refuses transports that have no many-client form, or whose form
// cannot take the counts as configured (CanFan), before anything is
// created.
func Check(ts []transport.Transport) error {
	var not []string
	for _, t := range ts {
		if _, ok := transport.FannerOf(t); !ok {
			not = append(not, t.Name())
		}
		if cf, ok := t.(interface{ CanFan() error }); ok {
			if err := cf.CanFan(); err != nil {
				return fmt.Errorf("--clients: %w", err)
			}
		}
	}
	if len(not) > 0 {
		return fmt.Errorf("--clients: no many-client form yet for %s (there is for ssh, the WireGuard rows, openvpn-tls and tw)", strings.Join(not, ", "))
	}
	return nil
}
