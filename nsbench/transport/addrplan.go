package transport

import (
	"fmt"
	"net/netip"
)

// addressPlan is every inner address range a transport's path holds, in
// one table: each transport takes its addresses from its entry (.1 the
// server's end, .2 the client's). TestAddressPlan proves that no two
// ranges overlap, nor any with the testbed's own network. A new transport
// with inner addresses adds its line here.
var addressPlan = []struct {
	owner  string // the transports that use the range
	prefix netip.Prefix
}{
	{"libreswan", netip.MustParsePrefix("10.91.0.0/24")},
	{"ipsec, ipsec-tunnel", netip.MustParsePrefix("10.92.0.0/24")},
	{"strongswan, strongswan-kernel", netip.MustParsePrefix("10.93.0.0/24")},
	{"sshuttle", netip.MustParsePrefix("10.94.0.0/24")},
	{"openvpn-static, openvpn-tls", netip.MustParsePrefix("10.97.0.0/24")},
	{"ssh-tun", netip.MustParsePrefix("10.98.0.0/24")},
	{"wireguard, wireguard-kernel, wireguard-go", netip.MustParsePrefix("10.99.0.0/24")},
}

// innerRange is the range of owner in the address plan.
func innerRange(owner string) netip.Prefix {
	for _, r := range addressPlan {
		if r.owner == owner {
			return r.prefix
		}
	}
	panic(fmt.Sprintf("address plan: no range for %q", owner))
}

// innerAddr is host number host (1 the server's end, 2 the client's) in
// owner's range.
func innerAddr(owner string, host byte) netip.Addr {
	a := innerRange(owner).Addr().As4()
	a[3] = host
	return netip.AddrFrom4(a)
}

// innerPrefix is innerAddr with the range's length, as an interface
// address.
func innerPrefix(owner string, host byte) netip.Prefix {
	return netip.PrefixFrom(innerAddr(owner, host), innerRange(owner).Bits())
}
