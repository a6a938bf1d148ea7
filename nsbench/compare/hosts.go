package compare

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// hostsByRole is each role's host in a run across hosts, and the roles in
// the order they were recorded.
func hostsByRole(hs []results.Host) (map[string]results.Host, []string) {
	by := map[string]results.Host{}
	var roles []string
	for _, h := range hs {
		for _, r := range h.Roles {
			by[r] = h
			roles = append(roles, r)
		}
	}
	return by, roles
}

// roleHosts pairs each role's host in a and b, in a's order then b's; a
// role of a run on one host has no Host (ok false).
func roleHosts(a, b []results.Host, each func(role string, x, y results.Host, okX, okY bool)) {
	ba, ra := hostsByRole(a)
	bb, rb := hostsByRole(b)
	seen := map[string]bool{}
	for _, r := range append(ra, rb...) {
		if seen[r] {
			continue
		}
		seen[r] = true
		x, okX := ba[r]
		y, okY := bb[r]
		each(r, x, y, okX, okY)
	}
}

// hostDiffs lists how the machines each role ran on differ: a role on
// another host in one run and on the orchestrator in the other, or a host
// with another kernel, CPU, core count or NIC (driver, speed, MTU,
// offloads). The login alone is not compared: the same machine may be
// reached at another address.
func hostDiffs(a, b []results.Host) []string {
	var diffs []string
	roleHosts(a, b, func(role string, x, y results.Host, okX, okY bool) {
		if okX != okY {
			diffs = append(diffs, fmt.Sprintf("%s host %q vs %q", textsafe.Quote(role), where(x, okX), where(y, okY)))
			return
		}
		itoa := func(n int) string {
			if n <= 0 {
				return ""
			}
			return strconv.Itoa(n)
		}
		for _, f := range []struct{ name, x, y string }{
			{"kernel", x.Kernel, y.Kernel}, {"cpu", x.CPUModel, y.CPUModel}, {"cores", itoa(x.Cores), itoa(y.Cores)},
			{"nic driver", x.Driver, y.Driver}, {"link speed Mbit/s", itoa(x.SpeedMbps), itoa(y.SpeedMbps)},
			{"mtu", itoa(x.MTU), itoa(y.MTU)}, {"nic offloads", x.Offloads, y.Offloads},
		} {
			if f.x != f.y {
				diffs = append(diffs, fmt.Sprintf("%s host %s %q vs %q", textsafe.Quote(role), f.name, f.x, f.y))
			}
		}
	})
	return diffs
}

// hostToolDiffs lists the programs whose versions differ on a role's host
// between the two runs.
func hostToolDiffs(a, b []results.Host) []string {
	var diffs []string
	roleHosts(a, b, func(role string, x, y results.Host, okX, okY bool) {
		if !okX || !okY {
			return // hostDiffs names it
		}
		seen := map[string]bool{}
		for _, tools := range []map[string]string{x.Tools, y.Tools} {
			for _, name := range slices.Sorted(maps.Keys(tools)) {
				if !seen[name] && x.Tools[name] != y.Tools[name] {
					diffs = append(diffs, fmt.Sprintf("%s host %s %q vs %q", textsafe.Quote(role), textsafe.Quote(name), x.Tools[name], y.Tools[name]))
				}
				seen[name] = true
			}
		}
	})
	return diffs
}

func where(h results.Host, ok bool) string {
	if !ok {
		return "the orchestrator"
	}
	return h.Login
}
