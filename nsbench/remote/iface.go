package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
)

// Iface is the benchmark interface found on a host.
type Iface struct {
	Name string
	IPv4 []netip.Prefix // its IPv4 addresses
	// ReachedBy is the host's address this SSH connection arrived at
	// (SSH_CONNECTION), which picks the interface when none is named.
	ReachedBy netip.Addr
}

// ipAddr is one entry of `ip -j addr show`.
type ipAddr struct {
	Ifname   string `json:"ifname"`
	AddrInfo []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		Prefixlen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

// Iface finds the host's benchmark interface: the one named, or the one
// holding the address the connection reached it at. One that does not
// exist or has no IPv4 address is refused, naming the host.
func (c *Conn) Iface(ctx context.Context) (Iface, error) {
	// iproute2 lives in /sbin on some systems, outside a user's PATH.
	out, err := c.Output(ctx, `echo "$SSH_CONNECTION"; PATH="$PATH:/usr/sbin:/sbin" ip -j addr show`, nil)
	if err != nil {
		return Iface{}, fmt.Errorf("find the interface: %w", err)
	}
	sshConn, addrs, _ := strings.Cut(string(out), "\n")
	ifc, err := pickIface(sshConn, []byte(addrs), c.Host.Iface)
	if err != nil {
		return Iface{}, fmt.Errorf("%s: %w", c.Host.Dest(), err)
	}
	return ifc, nil
}

// pickIface chooses from `ip -j addr show` given SSH_CONNECTION ("client
// port server port") and the name wanted ("" for the one holding server).
func pickIface(sshConn string, ipJSON []byte, want string) (Iface, error) {
	var reachedBy netip.Addr
	if f := strings.Fields(sshConn); len(f) == 4 {
		if a, err := netip.ParseAddr(f[2]); err == nil {
			reachedBy = a.Unmap()
		}
	}
	return pickIfaceBy(reachedBy, ipJSON, want)
}

// LocalIface finds this machine's benchmark interface for a role on it
// beside roles on other hosts: the one named, or the one holding reachedBy,
// the address this machine reaches the other hosts from.
func LocalIface(ctx context.Context, want string, reachedBy netip.Addr) (Iface, error) {
	out, err := exec.CommandContext(ctx, "ip", "-j", "addr", "show").Output()
	if err != nil {
		return Iface{}, fmt.Errorf("this machine: ip -j addr show: %w", err)
	}
	ifc, err := pickIfaceBy(reachedBy, out, want)
	if err != nil {
		return Iface{}, fmt.Errorf("this machine: %w", err)
	}
	return ifc, nil
}

// pickIfaceBy chooses from `ip -j addr show` the interface named want, or
// with want "" the one holding reachedBy.
func pickIfaceBy(reachedBy netip.Addr, ipJSON []byte, want string) (Iface, error) {
	var links []ipAddr
	if err := json.Unmarshal(ipJSON, &links); err != nil {
		return Iface{}, fmt.Errorf("read ip -j addr show: %w", err)
	}
	ifc := Iface{ReachedBy: reachedBy}
	var names []string
	found := false
	for _, l := range links {
		names = append(names, l.Ifname)
		match := want != "" && l.Ifname == want
		var v4 []netip.Prefix
		for _, ai := range l.AddrInfo {
			a, err := netip.ParseAddr(ai.Local)
			if err != nil {
				continue
			}
			if want == "" && a.Unmap() == ifc.ReachedBy {
				match = true
			}
			if ai.Family == "inet" {
				v4 = append(v4, netip.PrefixFrom(a, ai.Prefixlen))
			}
		}
		if match {
			ifc.Name, ifc.IPv4, found = l.Ifname, v4, true
			break
		}
	}
	switch {
	case !found && want != "":
		slices.Sort(names)
		return Iface{}, fmt.Errorf("no interface %q (it has: %s)", want, strings.Join(names, ", "))
	case !found:
		return Iface{}, fmt.Errorf("no interface holds the address this host was reached at (%q from SSH_CONNECTION); name one with iface=NAME", ifc.ReachedBy)
	case len(ifc.IPv4) == 0:
		return Iface{}, fmt.Errorf("interface %s has no IPv4 address", ifc.Name)
	case ifc.Name == "lo":
		return Iface{}, fmt.Errorf("interface lo is the loopback: reach the host by an address on its NIC, or name one with iface=NAME")
	}
	return ifc, nil
}
