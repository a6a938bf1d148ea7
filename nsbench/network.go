package nsbench

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
)

// The --nic choices: the settings the roles' interfaces measure with.
const (
	// NICReference turns tso/gso/gro off and caps gso_max_segs at 1 on
	// every role interface: each packet crosses as itself, as on tw's
	// Docker bridge, and loss lands on real packets. One host's default.
	NICReference = "reference"
	// NICOwn leaves the interfaces as their kernel and driver set them:
	// the default across hosts, where a 10–100 GbE rerun should measure
	// the machines, not the harness's settings (#32: 1.24 Gbit/s with the
	// reference's settings where iperf3 by hand read 21.9 between the same
	// two emulated machines).
	NICOwn = "own"
)

// Network is how the roles' network stacks are set, and which CPUs run
// them: a packet a role sends crosses the veths and the bridge on the
// sender's CPU and wakes its receiver there or on another.
type Network struct {
	Congestion string // a kernel algorithm name, or "host"
	// NIC is NICReference or NICOwn; "" is the default of where the roles
	// run (NewPlan resolves it: own across hosts, reference on one).
	NIC string
	// Pin is a --pin layout (PinOff, PinSame, PinSplit; "" is off): the
	// CPUs every process a role starts is kept on.
	Pin string
}

// resolve returns n with its NIC default filled in for a run across hosts
// or not, and --pin off as no layout.
func (n Network) resolve(acrossHosts bool) Network {
	if n.Pin == PinOff {
		n.Pin = ""
	}
	if n.NIC == "" {
		n.NIC = NICReference
		if acrossHosts {
			n.NIC = NICOwn
		}
	}
	return n
}

// validate checks n (resolved) against the run's WAN conditions and
// this host's CPUs.
func (n Network) validate(wan []string, acrossHosts bool) []error {
	var errs []error
	if _, err := hostPinLayout(n.Pin); err != nil {
		errs = append(errs, err)
	} else if acrossHosts && n.Pin != "" {
		// The layout's CPUs are this machine's; a host's may differ.
		errs = append(errs, fmt.Errorf("--pin %s: not with --host yet: the layout's CPUs are this machine's", n.Pin))
	}
	if !regexp.MustCompile(`^[a-z0-9_]+$`).MatchString(n.Congestion) {
		errs = append(errs, fmt.Errorf("--congestion %q: want an algorithm name such as cubic or bbr, or host", n.Congestion))
	}
	switch n.NIC {
	case NICReference:
	case NICOwn:
		// netem and the userspace forwarder drop and delay what the
		// kernel hands them: with offloads on, 64 KB super-packets.
		if slices.ContainsFunc(wan, func(w string) bool { return w != "off" }) {
			errs = append(errs, errors.New("--nic own: the WAN conditions drop and delay whole packets, and with the interfaces' offloads on a packet is a super-packet of up to 64 KB: use --nic reference, or --wan off"))
		}
	default:
		errs = append(errs, fmt.Errorf("--nic %q: want reference (tso/gso/gro off, gso_max_segs 1) or own (the interfaces as they are)", n.NIC))
	}
	return errs
}
