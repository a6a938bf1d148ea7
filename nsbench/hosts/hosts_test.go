package hosts

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Host
	}{
		{"client=root@10.0.0.2", Host{Role: "client", User: "root", Addr: "10.0.0.2", Port: 22}},
		{"server=bench@box.example:2222,iface=eth1", Host{Role: "server", User: "bench", Addr: "box.example", Port: 2222, Iface: "eth1"}},
		{"client=root@10.0.0.2,addr=10.0.0.11/24", Host{Role: "client", User: "root", Addr: "10.0.0.2", Port: 22, RoleAddr: netip.MustParsePrefix("10.0.0.11/24")}},
		{"relay=root@[fd00::3]:2200", Host{Role: "relay", User: "root", Addr: "fd00::3", Port: 2200}},
		{"relay=root@[fd00::3]", Host{Role: "relay", User: "root", Addr: "fd00::3", Port: 22}},
		{"client=local,addr=10.0.0.11/24", Host{Role: "client", Port: 22, Local: true, RoleAddr: netip.MustParsePrefix("10.0.0.11/24")}},
		{"client=local,iface=eth1", Host{Role: "client", Port: 22, Local: true, Iface: "eth1"}},
	} {
		got, err := ParseHost(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseHost(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := ParseHost(got.String()); err != nil || back != got {
			t.Errorf("ParseHost(%q) = %+v, %v; want it back", got.String(), back, err)
		}
	}
}

func TestParseHostRefusals(t *testing.T) {
	for in, want := range map[string]string{
		"client":                                "want ROLE=USER@HOST",
		"router=root@10.0.0.2":                  `unknown role "router" (roles: client, relay, server)`,
		"client=10.0.0.2":                       "the user is required",
		"client=root@":                          "empty host",
		"client=root@10.0.0.2:0":                `bad port "0"`,
		"client=root@10.0.0.2:70000":            `bad port "70000"`,
		"client=root@10.0.0.2:ssh":              `bad port "ssh"`,
		"client=root@fd00::3":                   "in brackets",
		"client=root@10.0.0.2,iface=":           `iface ""`,
		"client=root@10.0.0.2,iface=a/b":        `iface "a/b"`,
		"client=root@10.0.0.2,mtu=9000":         `unknown option "mtu=9000"`,
		"client=ro;ot@10.0.0.2":                 "characters no login name has",
		"client=root@10.0.0.2,addr=10.0.0.11":   `addr "10.0.0.11": want the role's IPv4 address with its network's length`,
		"client=root@10.0.0.2,addr=10.0.0.0/24": `addr "10.0.0.0/24"`,
		"client=root@10.0.0.2,addr=fd00::1/64":  `addr "fd00::1/64"`,
	} {
		_, err := ParseHost(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseHost(%q) = %v, want an error containing %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseHost(%q): error is not one line: %q", in, err)
		}
	}
}

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hosts")
	os.WriteFile(file, []byte("# the lab\n\nclient=root@10.0.0.2\nserver=bench@10.0.0.3,iface=eth1\n"), 0o644)
	key := filepath.Join(dir, "id")
	os.WriteFile(key, []byte("k"), 0o600)

	inv, err := Parse(Flags{HostsFile: file, Host: []string{"relay=root@10.0.0.4"}, Identity: key})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Hosts) != 3 || inv.Hosts[0].Role != "client" || inv.Hosts[2].Role != "relay" || inv.Identity != key {
		t.Errorf("inventory %+v", inv)
	}
	if h, ok := inv.Role("server"); !ok || h.Iface != "eth1" || h.Dest() != "bench@10.0.0.3:22" {
		t.Errorf("server: %+v %v", h, ok)
	}

	for name, tc := range map[string]struct {
		f    Flags
		want string
	}{
		"duplicate in file and flag": {Flags{HostsFile: file, Host: []string{"client=root@10.0.0.9"}}, "--host client=root@10.0.0.9: role client is already on a host (hosts:3)"},
		"duplicate flags":            {Flags{Host: []string{"server=root@a", "server=root@b"}}, "role server is already on a host"},
		"missing hosts file":         {Flags{HostsFile: filepath.Join(dir, "nope")}, "--hosts: open"},
		"missing identity":           {Flags{Host: []string{"client=root@a"}, Identity: filepath.Join(dir, "nope")}, "--identity: open"},
		"missing known hosts":        {Flags{Host: []string{"client=root@a"}, KnownHosts: filepath.Join(dir, "nope")}, "--known-hosts: open"},
		"bad line in file":           {Flags{HostsFile: writeFile(t, dir, "bad", "client=root@a\nserver=root@b:99999\n")}, "bad:2: server: bad port"},
		"empty file":                 {Flags{HostsFile: writeFile(t, dir, "empty", "# nothing\n")}, "names no host"},
	} {
		if _, err := Parse(tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
	if !(Flags{}).Empty() || (Flags{HostsFile: file}).Empty() {
		t.Error("Empty")
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The sweep's clients on the client's host: consecutive addresses from its
// addr=, each in the network and no other role's; refused otherwise.
func TestFan(t *testing.T) {
	inv := func(entries ...string) Inventory {
		var v Inventory
		for _, e := range entries {
			h, err := ParseHost(e)
			if err != nil {
				t.Fatal(err)
			}
			v.Hosts = append(v.Hosts, h)
		}
		return v
	}
	roles := []string{"client", "client2", "client3"}
	fan, err := inv("client=root@10.0.0.2,addr=10.0.0.50/24", "server=root@10.0.0.3,addr=10.0.0.60/24").Fan(roles)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"10.0.0.50/24", "10.0.0.51/24", "10.0.0.52/24"} {
		if h := fan[i]; h.Role != roles[i] || h.RoleAddr.String() != want || h.Addr != "10.0.0.2" || h.User != "root" {
			t.Errorf("client %d: %+v, want role %s at %s on root@10.0.0.2", i+1, h, roles[i], want)
		}
	}
	// One client is the client itself.
	if one, err := inv("client=local,addr=10.0.0.50/24").Fan(roles[:1]); err != nil || len(one) != 1 || !one[0].Local || one[0].RoleAddr.String() != "10.0.0.50/24" {
		t.Errorf("one client: %+v, %v", one, err)
	}

	for name, tc := range map[string]struct {
		inv  Inventory
		want string
	}{
		"the broadcast address": {inv("client=root@h,addr=10.0.0.253/24"),
			"--host client: 3 clients from addr 10.0.0.253: client3 would be 10.0.0.255, past the end of 10.0.0.0/24 (its last host address is 10.0.0.254)"},
		"the end of a /30": {inv("client=root@h,addr=10.0.0.6/30"),
			"--host client: 3 clients from addr 10.0.0.6: client2 would be 10.0.0.7, past the end of 10.0.0.4/30 (its last host address is 10.0.0.6)"},
		"another role's address": {inv("server=root@s,addr=10.0.0.51/24", "client=root@h,addr=10.0.0.50/24"),
			"--host client: 3 clients from addr 10.0.0.50: client2 would be 10.0.0.51, the server's addr: give the clients 3 free addresses in a row"},
		"no addr": {inv("client=root@h"), "--host client: the clients need the client's host with addr=A.B.C.D/NN"},
	} {
		if _, err := tc.inv.Fan(roles); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
