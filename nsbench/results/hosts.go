package results

import "slices"

// Host is a machine that held roles of a run, as read on it when its
// roles were built: each host of a run across hosts (--host), and on one
// host this machine (Login LocalLogin, no interface: its roles stand on
// veths). A fact that could not be read is absent, never 0 or "": a veth
// or macvlan has no link speed of its own, an older document has no
// hosts at all.
type Host struct {
	Roles []string `json:"roles"` // the roles it held: client, relay, server
	Login string   `json:"login"` // USER@HOST:PORT, as the inventory names it

	Kernel   string `json:"kernel,omitempty"`    // uname release
	CPUModel string `json:"cpu_model,omitempty"` // /proc/cpuinfo "model name"
	Cores    int    `json:"cores,omitempty"`     // CPUs online

	NIC

	// Tools are the version lines of the programs the roles run there,
	// by program name; those not installed are absent.
	Tools map[string]string `json:"tools,omitempty"`

	// RoleLinks are the settings of the roles' own links on it, as built.
	RoleLinks *RoleLinks `json:"role_links,omitempty"`
}

// RoleLinks are the settings a machine's role links were built with: the
// offloads applied, the TCP congestion control the namespaces use and
// the global sysctls changed (and restored) to set it.
type RoleLinks struct {
	Offloads      string   `json:"offloads,omitempty"`
	Congestion    string   `json:"congestion,omitempty"`
	SysctlChanges []string `json:"sysctl_changes,omitempty"`
}

// LocalLogin is the login of the machine that ran twnsbench (a run on one
// host, or ROLE=local beside hosts).
const LocalLogin = "local"

// AcrossHosts reports whether the run's roles stood on machines other
// than the one that ran twnsbench (--host): only then do its hosts say
// where each role ran; on one host they describe this machine alone.
func (e *Env) AcrossHosts() bool {
	return slices.ContainsFunc(e.Hosts, func(h Host) bool { return h.Login != LocalLogin })
}

// HostsAcross is the run's hosts when its roles stood on other machines,
// nil on one host.
func (e *Env) HostsAcross() []Host {
	if !e.AcrossHosts() {
		return nil
	}
	return e.Hosts
}

// NIC is the benchmark interface a host's roles stood on, and what it is.
type NIC struct {
	Iface     string `json:"iface,omitempty"`
	Driver    string `json:"driver,omitempty"`     // ethtool's driver name
	SpeedMbps int    `json:"speed_mbps,omitempty"` // the link's, as ethtool reports it
	MTU       int    `json:"mtu,omitempty"`
	Offloads  string `json:"offloads,omitempty"` // "tso/gso/gro on", … (the host's own, not changed)
}

// AddHost records h; a host already recorded under the same login and
// interface (two roles on one machine) takes h's roles instead.
func (e *Env) AddHost(h Host) {
	i := slices.IndexFunc(e.Hosts, func(o Host) bool { return o.Login == h.Login && o.Iface == h.Iface })
	if i < 0 {
		e.Hosts = append(e.Hosts, h)
		return
	}
	for _, r := range h.Roles {
		if !slices.Contains(e.Hosts[i].Roles, r) {
			e.Hosts[i].Roles = append(e.Hosts[i].Roles, r)
		}
	}
}
