package fanout

import (
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

func TestParseCounts(t *testing.T) {
	got, err := ParseCounts("8, 1,2,4")
	if err != nil || !slices.Equal(got, []int{1, 2, 4, 8}) {
		t.Errorf("ParseCounts = %v, %v; want [1 2 4 8]", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "two", "65", "-1", "2,2", "1.5"} {
		if got, err := ParseCounts(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseCounts(%q) = %v, %v; want a one-line error", bad, got, err)
		}
	}
}

// The largest sweep fits: 64 clients and the server in the /24, every
// address distinct, every name a valid role and namespace.
func TestSpecRoomForMaxClients(t *testing.T) {
	s := Spec("twnsb-0abc12", transport.MaxFanClients, true)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(s.Roles) != transport.MaxFanClients+2 || s.Roles[65] != topology.Relay || s.Roles[0] != topology.Server || s.Roles[1] != topology.Client || s.Roles[64] != "client64" {
		t.Fatalf("roles %v", s.Roles)
	}
	seen := map[string]string{}
	for _, r := range s.Roles {
		a := s.Addr(r)
		if !a.IsValid() || !s.Subnet.Contains(a) {
			t.Errorf("%s: address %v outside %v", r, a, s.Subnet)
		}
		if other, ok := seen[a.String()]; ok {
			t.Errorf("%s and %s share %v", r, other, a)
		}
		seen[a.String()] = r
		if n := s.NetnsName(r); !strings.HasPrefix(n, "twnsb-0abc12-") {
			t.Errorf("%s: namespace %q lacks the run's prefix", r, n)
		}
	}
	if last := s.Addr("client64"); last.As4()[3] != 66 {
		t.Errorf("client64 at %v, want .66", last)
	}
	if r := s.Addr(topology.Relay); r.As4()[3] != 67 || s.HostNames["relay.tw.test"] != topology.Relay {
		t.Errorf("relay at %v, host names %v; want .67 and relay.tw.test", r, s.HostNames)
	}
	if Spec("twnsb-0abc12", 2, false).HostNames != nil {
		t.Error("a testbed without a relay names one")
	}
}
