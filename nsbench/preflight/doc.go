// Package preflight checks, before anything is created, that this host can
// run the benchmark: root, network namespaces, veth, bridge, TUN, cgroup v2,
// the tools and their versions, and memory for the tmpfs payload. It also
// says which optional kernel paths (WireGuard, netem) exist, so the harness
// can choose them or their userspace fallbacks.
//
// Every probe is read-only: it creates nothing, loads no module and changes
// no setting. A failed check carries the exact command that fixes it.
package preflight
