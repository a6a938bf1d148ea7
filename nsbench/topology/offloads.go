package topology

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/safchain/ethtool"
)

// offloadFeatures are the kernel's feature strings behind ethtool's
// "tso", "gso" and "gro" switches.
var offloadFeatures = []string{
	"tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation",
	"tx-tcp6-segmentation",    // tso
	"tx-generic-segmentation", // gso
	"rx-gro",                  // gro
}

// applyOffloads turns tso/gso/gro off on every role interface and switch
// port, and records what the kernel then holds. Without it a TCP sender
// hands 64 KB super-packets across the veths, and loss and forwarding
// costs stop being per ~1500-byte packet.
func (t *Topology) applyOffloads() error {
	if t.Spec.Offloads {
		return t.ownOffloads(t.Spec.Roles[0])
	}
	for _, name := range t.Spec.Roles {
		if err := t.Roles[name].NS.Do(func() error { return disableOffloads(RoleLink) }); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if t.Switch == nil {
			continue // a role on a host's interface (UpOnLink): no switch here
		}
		if err := t.Switch.Do(func() error { return disableOffloads(name) }); err != nil {
			return fmt.Errorf("switch port %s: %w", name, err)
		}
	}
	var still []string
	err := t.Roles[t.Spec.Roles[0]].NS.Do(func() error {
		var err error
		still, err = enabledOffloads(RoleLink)
		return err
	})
	if err != nil {
		return err
	}
	if len(still) > 0 {
		return fmt.Errorf("offloads still on after disabling: %s", strings.Join(still, ", "))
	}
	t.Offloads = "tso/gso/gro off"
	if t.Spec.GSOMaxSegs > 0 {
		t.Offloads += fmt.Sprintf(" + gso_max_segs %d", t.Spec.GSOMaxSegs)
	}
	where := " on every role interface and switch port"
	if t.Switch == nil {
		where = " on the role's interface"
	}
	t.Offloads += where + ", set before any connection " +
		"(netem-style loss then lands on real ~1500-byte packets for every transport; " +
		"LAN ceilings are software-segmentation ceilings)"
	return nil
}

// ownOffloads records the role interfaces' own settings, left as the
// kernel and driver set them (--nic own), read on role's.
func (t *Topology) ownOffloads(role string) error {
	var state string
	err := t.Roles[role].NS.Do(func() (err error) {
		state, err = OffloadsState(RoleLink)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	t.Offloads = "the interfaces' own settings (" + state + ", gso_max_segs as the kernel sets it)"
	return nil
}

// disableOffloads must run inside the link's namespace: the ethtool socket
// belongs to the namespace current when it is opened.
func disableOffloads(link string) error {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer e.Close()
	names, err := e.FeatureNames(link)
	if err != nil {
		return fmt.Errorf("ethtool features of %s: %w", link, err)
	}
	off := map[string]bool{}
	for _, f := range offloadFeatures {
		if _, ok := names[f]; ok {
			off[f] = false
		}
	}
	if err := e.Change(link, off); err != nil {
		return fmt.Errorf("disable offloads on %s: %w", link, err)
	}
	return nil
}

func enabledOffloads(link string) ([]string, error) {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	defer e.Close()
	feats, err := e.Features(link)
	if err != nil {
		return nil, fmt.Errorf("ethtool features of %s: %w", link, err)
	}
	var on []string
	for _, f := range offloadFeatures {
		if feats[f] {
			on = append(on, f)
		}
	}
	sort.Strings(on)
	return on, nil
}

// offloadSwitches are ethtool's switches, each the kernel features behind it.
var offloadSwitches = []struct{ name, prefix string }{
	{"tso", "tx-tcp"}, // every tx-tcp*-segmentation
	{"gso", "tx-generic-segmentation"},
	{"gro", "rx-gro"},
}

// OffloadsState says which of tso, gso and gro are on for link, in the
// calling thread's namespace ("tso/gso/gro on", "tso/gso/gro off" or "tso,
// gro on; gso off"): the same switches the roles' links turn off, read on an
// interface the harness does not change (a host's NIC).
func OffloadsState(link string) (string, error) {
	on, err := enabledOffloads(link)
	if err != nil {
		return "", err
	}
	var yes, no []string
	for _, s := range offloadSwitches {
		if slices.ContainsFunc(on, func(f string) bool { return strings.HasPrefix(f, s.prefix) }) {
			yes = append(yes, s.name)
		} else {
			no = append(no, s.name)
		}
	}
	switch {
	case len(no) == 0:
		return "tso/gso/gro on", nil
	case len(yes) == 0:
		return "tso/gso/gro off", nil
	}
	return strings.Join(yes, ", ") + " on; " + strings.Join(no, ", ") + " off", nil
}
