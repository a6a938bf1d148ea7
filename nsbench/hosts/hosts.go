// Package hosts is the inventory of a run across machines: which role runs
// on which host, reached as which user, on which interface, and with which
// SSH identity and known_hosts file. It is plain data, validated before
// anything exists anywhere; package remote reaches the hosts it names.
//
// A host is written the same way on the command line and in a --hosts file:
//
//	ROLE=USER@HOST[:PORT][,iface=NAME][,addr=A.B.C.D/NN]
//
// e.g. `client=root@10.0.0.2`, `server=bench@[fd00::3]:2222,iface=eth1`.
// addr is the role's own address on the benchmark network (its
// namespace's, beside the host's): `run` needs it, `doctor` and `clean`
// do not.
// A --hosts file holds one such entry a line; blank lines and lines starting
// with '#' are ignored. One syntax for both (rather than JSON or YAML) means
// a line can move between the file and the command line unchanged, the file
// diffs and greps by role, and there is no second schema to document.
package hosts

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"

	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Roles are the roles a host can take.
var Roles = []string{topology.Client, topology.Relay, topology.Server}

// DefaultPort is SSH's.
const DefaultPort = 22

// Host is one role's machine.
type Host struct {
	Role  string // client, relay or server
	User  string // the login; root, or an account with NOPASSWD sudo
	Addr  string // host name or IP address, without brackets
	Port  int
	Iface string // the benchmark interface; "" picks the one holding the address the host is reached by
	// RoleAddr is the address the role's namespace takes on the benchmark
	// network, with the network's length (a free one: twnsbench never
	// picks an address on someone's network by itself).
	RoleAddr netip.Prefix
	// Local is a role on this machine beside roles on others
	// (ROLE=local): a namespace joined to this machine's interface, not
	// reached over SSH.
	Local bool
}

// LocalName is the login of a role on this machine (ROLE=local), as the
// results record it.
const LocalName = results.LocalLogin

// Dest is "USER@HOST:PORT" (brackets around an IPv6 address), the host's
// name in every message about it; "local" for this machine.
func (h Host) Dest() string {
	if h.Local {
		return LocalName
	}
	return h.User + "@" + h.HostPort()
}

// HostPort is the address to dial.
func (h Host) HostPort() string { return net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)) }

// String is the entry as it would be written.
func (h Host) String() string {
	s := h.Role + "=" + h.Dest()
	if h.Iface != "" {
		s += ",iface=" + h.Iface
	}
	if h.RoleAddr.IsValid() {
		s += ",addr=" + h.RoleAddr.String()
	}
	return s
}

// Inventory is every named host and how to reach them.
type Inventory struct {
	Hosts []Host
	// Identity is a private key file; "" uses ssh-agent and ~/.ssh/id_*.
	Identity string
	// KnownHosts is the known_hosts file; "" is ~/.ssh/known_hosts.
	KnownHosts string
}

// Role returns the host of role, if one is named.
func (inv Inventory) Role(role string) (Host, bool) {
	for _, h := range inv.Hosts {
		if h.Role == role {
			return h, true
		}
	}
	return Host{}, false
}

// Flags are the command line's host options, as given.
type Flags struct {
	Host       []string // --host entries
	HostsFile  string   // --hosts
	Identity   string   // --identity
	KnownHosts string   // --known-hosts
}

// Empty reports whether no host was named: the run stays on this machine.
func (f Flags) Empty() bool { return len(f.Host) == 0 && f.HostsFile == "" }

// Parse validates the flags into an inventory: the --hosts file's entries
// first, then the --host ones; every file named must be readable. Errors
// are one line naming the flag or the file and line.
func Parse(f Flags) (Inventory, error) {
	var inv Inventory
	seen := map[string]string{} // role → where it was named
	add := func(where, entry string) error {
		h, err := ParseHost(entry)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if prev, dup := seen[h.Role]; dup {
			return fmt.Errorf("%s: role %s is already on a host (%s)", where, h.Role, prev)
		}
		seen[h.Role] = where
		inv.Hosts = append(inv.Hosts, h)
		return nil
	}
	if f.HostsFile != "" {
		entries, err := readFile(f.HostsFile)
		if err != nil {
			return Inventory{}, err
		}
		for _, e := range entries {
			if err := add(e.where, e.text); err != nil {
				return Inventory{}, err
			}
		}
	}
	for _, e := range f.Host {
		if err := add("--host "+e, e); err != nil {
			return Inventory{}, err
		}
	}
	for _, file := range []struct{ flag, path string }{{"--identity", f.Identity}, {"--known-hosts", f.KnownHosts}} {
		if file.path == "" {
			continue
		}
		if err := readable(file.path); err != nil {
			return Inventory{}, fmt.Errorf("%s: %w", file.flag, err)
		}
	}
	inv.Identity, inv.KnownHosts = f.Identity, f.KnownHosts
	return inv, nil
}

// ParseHost parses one ROLE=USER@HOST[:PORT][,iface=NAME][,addr=A.B.C.D/NN]
// entry, or ROLE=local[,…] for a role on this machine.
func ParseHost(entry string) (Host, error) {
	role, rest, ok := strings.Cut(strings.TrimSpace(entry), "=")
	if !ok || role == "" {
		return Host{}, fmt.Errorf("want ROLE=USER@HOST[:PORT][,iface=NAME][,addr=A.B.C.D/NN] or ROLE=local[,…], got %q", entry)
	}
	if !slices.Contains(Roles, role) {
		return Host{}, fmt.Errorf("unknown role %q (roles: %s)", role, strings.Join(Roles, ", "))
	}
	fields := strings.Split(rest, ",")
	h := Host{Role: role, Port: DefaultPort, Local: fields[0] == LocalName}
	if err := h.parseOptions(fields[1:]); err != nil {
		return Host{}, err
	}
	if h.Local {
		return h, nil
	}
	user, hostport, ok := strings.Cut(fields[0], "@")
	if !ok || user == "" {
		return Host{}, fmt.Errorf("%s: want USER@HOST[:PORT], got %q (the user is required: root, or an account with NOPASSWD sudo)", role, fields[0])
	}
	if strings.ContainsAny(user, " \t'\"\\$`;") {
		return Host{}, fmt.Errorf("%s: user %q has characters no login name has", role, user)
	}
	h.User = user
	addr, port, err := splitHostPort(hostport)
	if err != nil {
		return Host{}, fmt.Errorf("%s: %w", role, err)
	}
	h.Addr, h.Port = addr, port
	return h, nil
}

// parseOptions reads an entry's NAME=VALUE options.
func (h *Host) parseOptions(fields []string) error {
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "iface":
			if !validIfname(v) {
				return fmt.Errorf("%s: iface %q is not an interface name (1-15 characters, no '/', ':' or spaces)", h.Role, v)
			}
			h.Iface = v
		case "addr":
			p, err := netip.ParsePrefix(v)
			if err != nil || !p.Addr().Is4() || p.Bits() < 8 || p.Bits() > 30 || p.Addr() == p.Masked().Addr() {
				return fmt.Errorf("%s: addr %q: want the role's IPv4 address with its network's length, e.g. addr=10.0.0.11/24", h.Role, v)
			}
			h.RoleAddr = p
		default:
			return fmt.Errorf("%s: unknown option %q (options: iface=NAME, addr=A.B.C.D/NN)", h.Role, f)
		}
	}
	return nil
}

// splitHostPort accepts HOST, HOST:PORT, [V6] and [V6]:PORT.
func splitHostPort(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("empty host")
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		// No port: a name, an IPv4 address, or a bracketed IPv6 one.
		host, portStr = s, ""
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			host = s[1 : len(s)-1]
		} else if strings.Count(s, ":") > 0 {
			return "", 0, fmt.Errorf("host %q: write an IPv6 address in brackets, [ADDR]:PORT", s)
		}
	}
	if host == "" || strings.ContainsAny(host, " \t/@,'\"") {
		return "", 0, fmt.Errorf("bad host %q", host)
	}
	port := DefaultPort
	if portStr != "" {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 {
			return "", 0, fmt.Errorf("bad port %q (1-65535)", portStr)
		}
		port = p
	}
	return host, port, nil
}

func validIfname(s string) bool {
	return s != "" && len(s) <= 15 && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n")
}

type fileEntry struct{ where, text string }

func readFile(path string) ([]fileEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--hosts: %w", err)
	}
	defer f.Close()
	var entries []fileEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		entries = append(entries, fileEntry{fmt.Sprintf("%s:%d", filepath.Base(path), n), line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--hosts: read %s: %w", path, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("--hosts: %s names no host", path)
	}
	return entries, nil
}

func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// Fan is the client's host as each of roles, the many-client sweep's
// clients on one host: the first at the client's addr=, each next one at
// the address after the one before, with the same network length. The
// user gave the first address and the count; every one must lie in the
// network, short of its broadcast address, and be no other role's
// address. Whether each is free on the network is the run's to check
// before anything exists (the hosts' own addresses) and the role's as it
// is built (its ARP probe).
func (inv Inventory) Fan(roles []string) ([]Host, error) {
	client, ok := inv.Role(topology.Client)
	if !ok || !client.RoleAddr.IsValid() {
		return nil, fmt.Errorf("--host %s: the clients need the client's host with addr=A.B.C.D/NN, the first of their addresses", topology.Client)
	}
	others := map[netip.Addr]string{}
	for _, h := range inv.Hosts {
		if h.Role != client.Role && h.RoleAddr.IsValid() {
			others[h.RoleAddr.Addr()] = h.Role
		}
	}
	net := client.RoleAddr.Masked()
	last := broadcast(net)
	fan := make([]Host, 0, len(roles))
	a := client.RoleAddr.Addr()
	for i, r := range roles {
		if i > 0 {
			a = a.Next()
		}
		if !net.Contains(a) || a == last {
			return nil, fmt.Errorf("--host %s: %d clients from addr %s: %s would be %s, past the end of %s (its last host address is %s)",
				client.Role, len(roles), client.RoleAddr.Addr(), r, a, net, last.Prev())
		}
		if other, taken := others[a]; taken {
			return nil, fmt.Errorf("--host %s: %d clients from addr %s: %s would be %s, the %s's addr: give the clients %d free addresses in a row",
				client.Role, len(roles), client.RoleAddr.Addr(), r, a, other, len(roles))
		}
		h := client
		h.Role, h.RoleAddr = r, netip.PrefixFrom(a, client.RoleAddr.Bits())
		fan = append(fan, h)
	}
	return fan, nil
}

// broadcast is the last address of the IPv4 network p.
func broadcast(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom4(b)
}
