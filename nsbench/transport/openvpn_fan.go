package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

var _ Fanner = (*OpenVPN)(nil)

// CanFan says whether the transport has a many-client form: OpenVPN's
// TLS mode has (one server of many clients); static-key mode is point to
// point, one peer only.
func (t *OpenVPN) CanFan() error {
	if !t.tls {
		return fmt.Errorf("%s is point to point (static key): one client only", t.Name())
	}
	return nil
}

// FanUp for OpenVPN in TLS mode: one openvpn server (--server, subnet
// topology: it takes .1 of the OpenVPN range and gives each client the
// next address of its pool) with the run's client certificate accepted
// for every client (--duplicate-cn), and one openvpn client per client
// role, each reaching the server at its tunnel address. A client is
// ready when the fixture sshd answers through its tunnel.
func (t *OpenVPN) FanUp(ctx context.Context, tb *Testbed, clients []string, ports []int) (*Fan, error) {
	if err := t.CanFan(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ovpnReady)
	defer cancel()
	bin, err := t.program()
	if err != nil {
		return nil, fmt.Errorf("openvpn: %w", err)
	}
	sub := t.spec().Name
	srv, first := tb.Roles[topology.Server], tb.Roles[topology.Client]
	server, client, err := t.modeArgs(ctx, bin, sub, srv, first)
	if err != nil {
		return nil, err
	}
	var procs []*proc.Process
	f := &Fan{Label: "OpenVPN (TLS, " + strings.ToUpper(t.cipher) + "), one server of every client", Server: "openvpn",
		Close: func() error {
			ps := procs
			procs = nil
			for i, j := 0, len(ps)-1; i < j; i, j = i+1, j-1 {
				ps[i], ps[j] = ps[j], ps[i]
			}
			return stopAll(ps...)
		}}
	common := []string{bin, "--dev", ovpnIface, "--dev-type", "tun", "--proto", "udp", "--verb", "3", "--allow-compression", "no"}
	pool := innerRange("openvpn-static, openvpn-tls").Masked().Addr().String()
	p, err := srv.Start(ctx, srv.Program("openvpn-fan", append(append(slices.Clone(common), server...),
		"--mode", "server", "--lport", strconv.Itoa(ovpnPort), "--topology", "subnet",
		"--server", pool, "255.255.255.0", "--duplicate-cn", "--max-clients", strconv.Itoa(MaxFanClients))...))
	if err != nil {
		return nil, err
	}
	procs = append(procs, p)
	for _, name := range clients {
		r := tb.Roles[name]
		args := client
		if name != first.Name() {
			// The first client's certificate and key, and the CA, copied.
			files, err := copyFrom(ctx, first, r, sub, argValue(client, "--ca"), argValue(client, "--cert"), argValue(client, "--key"))
			if err != nil {
				return nil, errors.Join(fmt.Errorf("openvpn: %s: certificates: %w", name, err), f.Close())
			}
			args = withArgValues(client, map[string]string{"--ca": files[0], "--cert": files[1], "--key": files[2]})
		}
		args = append(append(slices.Clone(common), args...), "--pull", "--remote", srv.Addr().String(), strconv.Itoa(ovpnPort), "--nobind")
		c, err := r.Start(ctx, r.Program("openvpn-fan", args...))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("openvpn: %s: %w", name, err), f.Close())
		}
		procs = append(procs, c)
	}
	host := ovpnServer.String()
	for i, name := range clients {
		if err := tb.Roles[name].WaitTCP(ctx, net.JoinHostPort(host, strconv.Itoa(SSHPort)), procs[i+1]); err != nil {
			return nil, errors.Join(fmt.Errorf("openvpn: %s: sshd through the tunnel: %w", name, err), f.Close())
		}
		f.Targets = append(f.Targets, net.JoinHostPort(host, strconv.Itoa(ports[i])))
	}
	return f, nil
}

// argValue is the value that follows flag in args, "" when it is absent.
func argValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// withArgValues is a copy of args with the value after each flag of
// values replaced.
func withArgValues(args []string, values map[string]string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if v, ok := values[out[i]]; ok {
			out[i+1] = v
			i++
		}
	}
	return out
}
