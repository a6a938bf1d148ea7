package transport

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestSetExpands: a set's name stands for every variant of its members, in
// registration order; a row named besides the set is built once.
func TestSetExpands(t *testing.T) {
	ts, err := Build([]string{"ssh", "seed-002"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, x := range ts {
		rows = append(rows, x.Name())
	}
	got := strings.Join(rows, ",")
	for _, want := range []string{"ssh,wireguard,", "openvpn-static,openvpn-tls,openvpn-tls:chacha20-poly1305,openvpn-tls:aes-128-gcm",
		"strongswan,strongswan:aes128gcm16,strongswan:chacha20poly1305,strongswan:aes128-sha256"} {
		if !strings.Contains(got, want) {
			t.Errorf("seed-002 rows %s: want %s", got, want)
		}
	}
	if strings.Count(got, "ssh,") != 1 || slices.Contains(rows, "tw") {
		t.Errorf("rows %s: want ssh once and no tw", got)
	}
	if _, err := Build([]string{"seed-003"}, nil); err == nil || !strings.Contains(err.Error(), "sets: [seed-002]") {
		t.Errorf("unknown name: %v; want the sets listed", err)
	}
}

// TestStrongSwanKernelVariants: every strongswan-kernel variant has the
// transform the ESP probe tries and the proposal its label expects.
func TestStrongSwanKernelVariants(t *testing.T) {
	for _, v := range strongSwanKernelSpec.Variants {
		if _, ok := espAlgos[ssESPAlgo[v]]; !ok {
			t.Errorf("%s: no ESP transform to probe (%q)", v, ssESPAlgo[v])
		}
		if ssNegotiated[v] == "" {
			t.Errorf("%s: no expected negotiated proposal", v)
		}
	}
}

// TestCoexist: a path holding every packet (transport-mode IPsec) is up
// with no other; others are kept apart only by what they both hold.
func TestCoexist(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"ipsec", "ssh", false},
		{"ssh", "ipsec:aes-gcm-256", false},
		{"ipsec", "ipsec-tunnel", false},
		{"ipsec-tunnel", "ssh", true},
		{"strongswan", "libreswan", false}, // IKE's ports
		{"wireguard", "wireguard-go", false},
		{"wireguard", "openvpn-static", true},
		{"ssh", "tw", true},
	} {
		if got := Coexist(c.a, c.b); got != c.want {
			t.Errorf("Coexist(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// Every transport of a run is up together under a condition: the ports the
// transports' own daemons take in the server's namespace differ from each
// other's and from those tw's server takes by its defaults.
func TestPrivatePortsApart(t *testing.T) {
	seen := map[int]string{}
	for _, p := range twServerPorts {
		seen[p] = "tw"
	}
	for name, p := range privatePorts {
		if other, ok := seen[p]; ok {
			t.Errorf("%s's private port %d is %s's too", name, p, other)
		}
		seen[p] = name
	}
	for p, name := range seen {
		if slices.Contains(slices.Collect(maps.Values(FixturePorts())), p) {
			t.Errorf("%s's port %d is a fixture's", name, p)
		}
	}
	// The many-client sweep's iperf3 servers, one per client.
	for i := range MaxFanClients {
		p := FanPort(i)
		if name, ok := seen[p]; ok {
			t.Errorf("client %d's iperf3 port %d is %s's", i+1, p, name)
		}
		if slices.Contains(slices.Collect(maps.Values(FixturePorts())), p) || p == NetperfLocalPort {
			t.Errorf("client %d's iperf3 port %d is a fixture's", i+1, p)
		}
	}
}

// The many-client OpenVPN clients take the first client's certificate
// files at their own paths, every other argument kept.
func TestWithArgValues(t *testing.T) {
	args := []string{"--dh", "none", "--ca", "/a/ca.pem", "--cert", "/a/client.pem", "--key", "/a/client.key", "--tls-client"}
	if got := argValue(args, "--cert"); got != "/a/client.pem" {
		t.Errorf("argValue --cert = %q", got)
	}
	if got := argValue(args, "--tls-client"); got != "" {
		t.Errorf("argValue of a flag without a value = %q, want \"\"", got)
	}
	got := withArgValues(args, map[string]string{"--ca": "/b/ca.pem", "--key": "/b/client.key"})
	want := []string{"--dh", "none", "--ca", "/b/ca.pem", "--cert", "/a/client.pem", "--key", "/b/client.key", "--tls-client"}
	if !slices.Equal(got, want) || args[3] != "/a/ca.pem" {
		t.Errorf("withArgValues = %v, want %v (and the input untouched)", got, want)
	}
}
