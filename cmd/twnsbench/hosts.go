package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The --host usages: what hosts.ParseHost takes, and what each command
// requires of it. run needs every role's addr= (nsbench refuses a role
// without one) and both the client's and the server's host; doctor and
// clean reach the hosts only.
var (
	runHostUsage = "a role's machine: ROLE=USER@HOST[:PORT][,iface=NAME],addr=A.B.C.D/NN, or ROLE=local[,iface=NAME],addr=A.B.C.D/NN " +
		"for a role on this machine (repeatable; ROLE is one of " + strings.Join(hosts.Roles, ", ") + "; client and server required; " +
		"addr= is required: a free IPv4 address with its network's length, the role's own on that network; " +
		"IPv6 HOST in brackets; USER is root or has NOPASSWD sudo)"
	checkHostUsage = "a host to reach: ROLE=USER@HOST[:PORT][,iface=NAME] (repeatable; ROLE is one of " + strings.Join(hosts.Roles, ", ") + "; " +
		"an addr= is accepted and not used; IPv6 HOST in brackets; USER is root or has NOPASSWD sudo)"
)

// hostFlags are the options that name other machines (run, doctor and
// clean); hostUsage is the command's --host usage.
func hostFlags(hostUsage string) []cli.Flag {
	return []cli.Flag{
		&cli.GenericFlag{Name: "host", Value: &entries{}, Usage: hostUsage},
		&cli.StringFlag{Name: "hosts", Usage: "a file of --host entries, one a line (# comments)"},
		&cli.StringFlag{Name: "identity", Usage: "SSH private key (default: ssh-agent, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa)"},
		&cli.StringFlag{Name: "known-hosts", Usage: "known_hosts file the hosts' keys are checked against (default ~/.ssh/known_hosts)"},
		&cli.DurationFlag{Name: "connect-timeout", Value: 10 * time.Second, Usage: "bound on reaching each host (TCP connect, then the SSH handshake)"},
	}
}

// entries is a repeatable flag whose values are kept whole: a --host entry
// has commas of its own (",iface=eth1"), which a StringSliceFlag would split.
type entries []string

func (e *entries) Set(v string) error { *e = append(*e, v); return nil }
func (e *entries) String() string     { return strings.Join(*e, " ") }

// parseHosts returns the inventory the flags name; ok is false when none
// is named (the command acts on this machine).
func parseHosts(c *cli.Context) (inv hosts.Inventory, cfg remote.Config, ok bool, err error) {
	var given []string
	if e, ok := c.Generic("host").(*entries); ok {
		given = *e
	}
	f := hosts.Flags{Host: given, HostsFile: c.String("hosts"),
		Identity: c.String("identity"), KnownHosts: c.String("known-hosts")}
	if f.Empty() {
		for _, name := range []string{"identity", "known-hosts"} {
			if c.IsSet(name) {
				return inv, cfg, false, fmt.Errorf("--%s: names no host (add --host or --hosts)", name)
			}
		}
		return inv, cfg, false, nil
	}
	if inv, err = hosts.Parse(f); err != nil {
		return inv, cfg, false, err
	}
	if c.Duration("connect-timeout") <= 0 {
		return inv, cfg, false, fmt.Errorf("--connect-timeout %s: must be positive", c.Duration("connect-timeout"))
	}
	cfg = remote.Config{Identity: inv.Identity, KnownHosts: inv.KnownHosts, DialTimeout: c.Duration("connect-timeout")}
	return inv, cfg, true, nil
}

// onHost is what a command does with one host, reached as root, through
// the agent of a verified copy of this binary there; it writes its lines
// to w.
type onHost func(ctx context.Context, w io.Writer, h hosts.Host, agent *role.Wire, ifc remote.Iface) error

// eachHost reaches every host at once: connect (host key, login, root),
// find its interface, copy this binary there and start it as the host's
// agent, do f through it, end the agent and remove the copy. Each host's
// lines are printed together, in the inventory's order. A host that fails
// is named and does not stop the others; any failure is a refusal (exit
// 2).
func eachHost(ctx context.Context, w io.Writer, inv hosts.Inventory, cfg remote.Config, f onHost) error {
	runID, err := topology.NewPrefix()
	if err != nil {
		return err
	}
	outs := make([]bytes.Buffer, len(inv.Hosts))
	errs := make([]error, len(inv.Hosts))
	var wg sync.WaitGroup
	for i, h := range inv.Hosts {
		if h.Local {
			fmt.Fprintf(&outs[i], "%s %s: this machine, not reached over SSH: the command without --host is for it\n", h.Role, h.Dest())
			continue
		}
		wg.Go(func() { errs[i] = oneHost(ctx, &outs[i], runID, cfg, h, f) })
	}
	wg.Wait()
	for i := range outs {
		w.Write(outs[i].Bytes())
	}
	if err := errors.Join(errs...); err != nil {
		return refuse(err)
	}
	return nil
}

func oneHost(ctx context.Context, w io.Writer, runID string, cfg remote.Config, h hosts.Host, f onHost) (err error) {
	site, err := nsbench.OpenSite(ctx, cfg, h, runID)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, site.Close()) }()
	if err := f(ctx, w, h, site.Agent(), site.Iface()); err != nil {
		return fmt.Errorf("%s: %s: %w", h.Role, h.Dest(), err)
	}
	return nil
}

// doctorHosts runs doctor on every host (req: what to check), and prints
// each host's checks, every line starting with the role and the host.
func doctorHosts(ctx context.Context, w io.Writer, inv hosts.Inventory, cfg remote.Config, req nsbench.DoctorRequest) error {
	return eachHost(ctx, w, inv, cfg, func(ctx context.Context, w io.Writer, h hosts.Host, agent *role.Wire, ifc remote.Iface) error {
		doc, err := nsbench.DoctorOn(ctx, agent, req)
		if err != nil {
			return err
		}
		d := newDoctorResult(doc)
		addrs := make([]string, len(ifc.IPv4))
		for i, a := range ifc.IPv4 {
			addrs[i] = a.String()
		}
		name := h.Role + " " + h.Dest()
		fmt.Fprintf(w, "%s: kernel %s, interface %s %s\n", name, d.Kernel, ifc.Name, strings.Join(addrs, " "))
		for _, c := range d.Checks {
			fmt.Fprintf(w, "%s: %s\n", name, c.line())
		}
		for _, t := range d.Transports {
			fmt.Fprintf(w, "%s: %s\n", name, t.line())
		}
		if len(d.Failed) > 0 {
			return fmt.Errorf("not ready: %s", strings.Join(d.Failed, "; "))
		}
		return nil
	})
}

// cleanHosts runs clean on every host, printing what each removed.
func cleanHosts(ctx context.Context, w io.Writer, inv hosts.Inventory, cfg remote.Config, force bool) error {
	return eachHost(ctx, w, inv, cfg, func(ctx context.Context, w io.Writer, h hosts.Host, agent *role.Wire, _ remote.Iface) error {
		// The host's clean also removes the copies killed commands left.
		rep, err := nsbench.CleanOn(ctx, agent, force)
		for _, line := range cleanLines(rep) {
			fmt.Fprintf(w, "%s %s: %s\n", h.Role, h.Dest(), line)
		}
		return err
	})
}
