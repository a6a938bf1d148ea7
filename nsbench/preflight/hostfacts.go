package preflight

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strings"

	"github.com/safchain/ethtool"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// A host's facts for the Environment: what it runs (kernel, CPU, the
// tools' versions) and the interface its roles stand on. They are read by
// the same code here and on a role's host (the op below): a host reached
// over SSH answers through its twnsbench copy, in its own namespace.

// roleTools are the harness's programs each role runs, whose versions its
// host states: the instruments' and the fixtures' on either side. A
// transport adds its own programs (transport.HostNeeds).
var roleTools = map[string][]string{
	topology.Client: {"iperf3", "netperf", "ssh"},
	topology.Server: {"iperf3", "netserver", "sshd"},
	topology.Relay:  {"sshd"},
}

// RoleTools are the harness's programs role runs, whose versions its
// host states.
func RoleTools(role string) []Tool {
	var ts []Tool
	for _, name := range roleTools[role] {
		ts = append(ts, harnessTool(name))
	}
	return ts
}

// factsRequest is the host.facts op's argument.
type factsRequest struct {
	Iface string
	Tools []Tool
}

// factsReply carries what was read and, apart, what could not be: an op's
// error would drop the facts that were read.
type factsReply struct {
	Host   results.Host
	Unread []string
}

var hostFactsOp = role.NewHostOp("host.facts", func(_ context.Context, a factsRequest) (factsReply, error) {
	h, err := ReadHost(a.Iface, a.Tools)
	r := factsReply{Host: h}
	if err != nil {
		r.Unread = []string{err.Error()}
	}
	return r, nil
})

// HostFacts reads the facts of machine m (this one, or a host through its
// twnsbench copy) and of its interface iface ("": none), with the versions
// of tools. An error names what could not be read; the Host holds what
// was.
func HostFacts(ctx context.Context, m role.Machine, iface string, tools []Tool) (results.Host, error) {
	r, err := hostFactsOp.On(ctx, m, factsRequest{Iface: iface, Tools: tools})
	if err != nil {
		return results.Host{}, fmt.Errorf("host facts: %w", err)
	}
	if len(r.Unread) > 0 {
		return r.Host, fmt.Errorf("host facts: %s", strings.Join(r.Unread, "; "))
	}
	return r.Host, nil
}

// ReadHost reads this host's facts and those of iface in the calling
// thread's namespace, with the versions of the tools installed among
// tools. What cannot be read is absent from the Host and named in the
// error; a link speed the interface does not have (a veth's, a macvlan's
// without one below it) is absent without an error.
func ReadHost(iface string, tools []Tool) (results.Host, error) {
	h := results.Host{Kernel: KernelRelease(), NIC: results.NIC{Iface: iface}}
	var errs []error
	if h.Kernel == "" {
		errs = append(errs, errors.New("kernel release: uname failed"))
	}
	var err error
	if h.CPUModel, err = CPUModel(); err != nil {
		errs = append(errs, err)
	}
	if on, err := metrics.OnlineCPUs(); err == nil {
		h.Cores = on.Count
	} else {
		errs = append(errs, err)
	}
	if iface != "" {
		errs = append(errs, readIface(&h, iface))
	}
	if v := ToolVersions(tools); len(v) > 0 {
		h.Tools = v
	}
	return h, errors.Join(errs...)
}

// nominalSpeed are drivers whose link speed is a constant of the driver
// (a veth's 10 Gbit/s, a tun's 10 Mbit/s), not a link's: left out. A
// macvlan's is its parent's, and kept.
var nominalSpeed = map[string]bool{"veth": true, "tun": true}

// readIface reads iface's MTU, driver, speed and offloads into h. Every
// reading goes through a socket of the calling thread's namespace, never
// /sys/class/net, which shows the namespace sysfs was mounted in.
func readIface(h *results.Host, iface string) error {
	ifc, err := net.InterfaceByName(iface)
	if err != nil {
		return fmt.Errorf("interface %s: %w", iface, err)
	}
	h.MTU = ifc.MTU
	e, err := ethtool.NewEthtool()
	if err != nil {
		return fmt.Errorf("%s: ethtool socket: %w", iface, err)
	}
	defer e.Close()
	var errs []error
	if h.Driver, err = e.DriverName(iface); err != nil {
		errs = append(errs, fmt.Errorf("%s driver: %w", iface, err))
	}
	// ETHTOOL_GSET, which sysfs's speed file reads too; unknown is -1
	// (all ones), and an interface without ethtool link settings has none.
	var cmd ethtool.EthtoolCmd
	if s, err := e.CmdGet(&cmd, iface); err == nil && s > 0 && s < math.MaxUint32 && !nominalSpeed[h.Driver] {
		h.SpeedMbps = int(s)
	}
	if h.Offloads, err = topology.OffloadsState(iface); err != nil {
		errs = append(errs, fmt.Errorf("%s offloads: %w", iface, err))
	}
	return errors.Join(errs...)
}

// CPUModel is /proc/cpuinfo's first "model name" (x86; other
// architectures may have none, which is an error naming the file).
func CPUModel() (string, error) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", fmt.Errorf("cpu model: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("cpu model: read /proc/cpuinfo: %w", err)
	}
	return "", errors.New("cpu model: no \"model name\" in /proc/cpuinfo")
}

// KernelRelease is uname's release ("6.1.0-18-amd64"), or "" when uname
// fails.
func KernelRelease() string { return kernelRelease() }
