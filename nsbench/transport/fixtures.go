package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/account"
	"github.com/twnsbench/twnsbench/nsbench/manyrr"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/rpm"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The server role's listeners, as in the reference.
const (
	SSHPort          = 22
	IPerf3Port       = 5201
	NetperfPort      = 12865
	NetperfDataPort  = 12866
	NetperfLocalPort = 12867
	ManyRRPort       = 12870
	RPMPort          = 12871

	// BenchUser is the account scp logs in as. It exists only inside
	// sshd's private mount namespace (see benchAccount): no host user is
	// created.
	BenchUser = "bench"
)

// FixturePorts are the services the fixtures run and their ports in the
// server's namespace.
func FixturePorts() map[Service]int {
	return map[Service]int{
		ServiceSSH: SSHPort, ServiceIPerf3: IPerf3Port,
		ServiceNetperf: NetperfPort, ServiceNetperfData: NetperfDataPort,
		ServiceManyRR: ManyRRPort, ServiceRPM: RPMPort,
	}
}

const stopGrace = 3 * time.Second

// Fixtures are the server role's daemons (sshd, iperf3, netserver) and the
// client's SSH identity, shared by every transport.
type Fixtures struct {
	KeyPath string // the client's private key
	// KnownHosts is the client's known_hosts: the server's host key,
	// pinned under ServerHostKeyAlias (SSHClientOptions).
	KnownHosts string
	procs      []fixtureProc
}

type fixtureProc struct {
	key      string // "server / sshd"
	role     *role.Role
	p        *proc.Process
	spec     proc.Program
	addr     string    // where it listens, waited for on (re)start
	services []Service // what it serves
}

// sshdAccount makes the bench account of a fixture sshd in Dir on the
// server's host and returns the mounts that show it to sshd only.
var sshdAccount = role.NewOp("transport.sshd-account", func(ctx context.Context, a sshdAccountArgs) ([]ns.Mount, error) {
	if err := role.CheckPath(ctx, a.Dir); err != nil {
		return nil, err
	}
	return account.SSHD(a.Dir, a.User)
})

type sshdAccountArgs struct{ Dir, User string }

// accountUID reads the uid sshdAccount gave the account in Dir.
var accountUID = role.NewOp("transport.account-uid", func(ctx context.Context, a sshdAccountArgs) (int, error) {
	if err := role.CheckRead(ctx, a.Dir); err != nil {
		return 0, err
	}
	return account.UID(a.Dir, a.User)
})

// StartFixtures writes sshd's configuration and keys into the server's
// directory, ssh/, and the client's key into the client's, and starts
// sshd, iperf3, netserver and those of twnsbench's own servers that own
// names (OwnServices: an instrument needs them) in the server role, each
// waited for on its port. On failure it stops what it started.
func StartFixtures(ctx context.Context, tb *Testbed, own []Service) (f *Fixtures, err error) {
	srv, cli := tb.Roles[topology.Server], tb.Roles[topology.Client]
	f = &Fixtures{}
	defer func() {
		if err != nil {
			f.Stop()
		}
	}()
	var pub []byte
	if f.KeyPath, pub, err = keygen(ctx, cli, "ssh", "id_ed25519", "twnsbench client"); err != nil {
		return f, err
	}
	hostKey, hostPub, err := keygen(ctx, srv, "ssh", "ssh_host_ed25519_key", "twnsbench host")
	if err != nil {
		return f, err
	}
	f.KnownHosts = filepath.Join(filepath.Dir(f.KeyPath), "known_hosts")
	if err := role.WriteFile(ctx, cli, f.KnownHosts, knownHostsLine(hostPub), 0o644); err != nil {
		return f, fmt.Errorf("client fixtures: %w", err)
	}
	dir := filepath.Dir(hostKey)
	authKeys := filepath.Join(dir, "authorized_keys")
	if err := role.WriteFile(ctx, srv, authKeys, pub, 0o644); err != nil {
		return f, fmt.Errorf("server fixtures: %w", err)
	}
	acct, err := sshdAccount.On(ctx, srv, sshdAccountArgs{Dir: dir, User: BenchUser})
	if err != nil {
		return f, fmt.Errorf("server fixtures: %w", err)
	}
	conf := filepath.Join(dir, "sshd_config")
	if err := role.WriteFile(ctx, srv, conf, []byte(SSHDConfig(hostKey, authKeys, filepath.Join(dir, "sshd.pid"))), 0o644); err != nil {
		return f, fmt.Errorf("server fixtures: %w", err)
	}
	server := srv.Addr().String()
	// "sshd": the server's host finds its own (proc.LookPath).
	spec := tb.Program(topology.Server, "sshd", "sshd", "-D", "-e", "-f", conf)
	spec.Mounts = append(spec.Mounts, acct...)
	if err := f.start(ctx, tb, fixtureProc{key: "server / sshd", spec: spec,
		addr: listenAddr(server, SSHPort), services: []Service{ServiceSSH}}); err != nil {
		return f, err
	}
	if err := f.start(ctx, tb, fixtureProc{key: "server / iperf3",
		spec: tb.Program(topology.Server, "iperf3", "iperf3", "-s", "-p", strconv.Itoa(IPerf3Port)),
		addr: listenAddr(server, IPerf3Port), services: []Service{ServiceIPerf3}}); err != nil {
		return f, err
	}
	// -D keeps netserver in the foreground as our child (a daemonized one
	// becomes a zombie of PID 1 and loses its PID).
	if err := f.start(ctx, tb, fixtureProc{key: "server / netserver",
		spec: tb.Program(topology.Server, "netserver", "netserver", "-D", "-4", "-p", strconv.Itoa(NetperfPort)),
		addr: listenAddr(server, NetperfPort), services: []Service{ServiceNetperf, ServiceNetperfData}}); err != nil {
		return f, err
	}
	// twnsbench's own servers are twnsbench itself (a hidden subcommand),
	// on every address as the others: a tunnel reaches them on its inner
	// one.
	for _, svc := range own {
		arg, port := ownServers[svc], FixturePorts()[svc]
		if arg == "" {
			return f, fmt.Errorf("server fixtures: %s is none of twnsbench's own servers", svc)
		}
		if err := f.start(ctx, tb, fixtureProc{key: "server / " + arg,
			spec: tb.Program(topology.Server, arg, srv.Self(), arg, "--listen", listenAddr("0.0.0.0", port)),
			addr: listenAddr(server, port), services: []Service{svc}}); err != nil {
			return f, err
		}
	}
	return f, nil
}

// ownServers are the services twnsbench serves itself, by their hidden
// subcommands: started only when an instrument needs one.
var ownServers = map[Service]string{ServiceManyRR: manyrr.ServerArg, ServiceRPM: rpm.ServerArg}

// OwnServices are the services of twnsbench's own servers, in start order.
func OwnServices() []Service { return []Service{ServiceManyRR, ServiceRPM} }

func listenAddr(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func (f *Fixtures) start(ctx context.Context, tb *Testbed, fp fixtureProc) error {
	p, err := tb.Start(ctx, topology.Server, fp.spec, fp.addr)
	if err != nil {
		return fmt.Errorf("server fixtures: %w", err)
	}
	fp.p, fp.role = p, tb.Roles[topology.Server]
	f.procs = append(f.procs, fp)
	return nil
}

// Serving names the daemon that serves svc ("server / iperf3"), or "".
func (f *Fixtures) Serving(svc Service) string {
	for _, fp := range f.procs {
		if slices.Contains(fp.services, svc) {
			return fp.key
		}
	}
	return ""
}

// Restart stops the daemon that serves svc (its whole process group, a
// frozen one by SIGKILL after the grace) and starts it again, waited for
// on its port: a fixture that stopped answering costs one sample.
func (f *Fixtures) Restart(ctx context.Context, tb *Testbed, svc Service) error {
	for i := range f.procs {
		fp := &f.procs[i]
		if !slices.Contains(fp.services, svc) {
			continue
		}
		if err := fp.p.Stop(stopGrace); err != nil {
			return fmt.Errorf("%s: restart: %w", fp.key, err)
		}
		p, err := tb.Start(ctx, topology.Server, fp.spec, fp.addr)
		if err != nil {
			return fmt.Errorf("%s: restart: %w", fp.key, err)
		}
		fp.p = p
		return nil
	}
	return fmt.Errorf("no server fixture serves %s", svc)
}

// FullRestart is the daemon that serves svc as a Restarter whose Stop
// ends it whole: its listener and every process it forked (sshd's
// per-connection processes, which outlive a listener stopped alone), so
// that every connection to it ends, as when the server's sshd went away.
// nil when no fixture serves svc.
func (f *Fixtures) FullRestart(svc Service) Restarter {
	for i := range f.procs {
		fp := &f.procs[i]
		if slices.Contains(fp.services, svc) {
			return &restartable{r: fp.role, spec: fp.spec, addr: fp.addr, p: &fp.p, tree: true,
				what: fp.key + ": its listener and every connection's processes"}
		}
	}
	return nil
}

// Procs are the fixture daemons, for the memory table's baseline rows.
func (f *Fixtures) Procs() []RSSProc {
	var ps []RSSProc
	for _, fp := range f.procs {
		ps = append(ps, RSSProc{Key: fp.key, PID: fp.p.PID(), Role: fp.role})
	}
	return ps
}

// Stop stops the daemons in reverse start order. Safe to call twice.
func (f *Fixtures) Stop() error {
	var errs []error
	for i := len(f.procs) - 1; i >= 0; i-- {
		errs = append(errs, f.procs[i].p.Stop(stopGrace))
	}
	return errors.Join(errs...)
}

// SSHDConfig is the fixture sshd's configuration: key-only logins for the
// bench user, no PAM (no host account is touched), SFTP in-process.
func SSHDConfig(hostKey, authorizedKeys, pidFile string) string {
	lines := []string{
		"# twnsbench server fixture",
		"Port " + strconv.Itoa(SSHPort),
		"ListenAddress 0.0.0.0",
		"HostKey " + hostKey,
		"PidFile " + pidFile,
		"AuthorizedKeysFile " + authorizedKeys,
	}
	lines = append(lines, account.SSHDLogins(BenchUser)...)
	return strings.Join(append(lines,
		"X11Forwarding no",
		"AllowTcpForwarding yes",
		"MaxStartups 100:30:200",
		"Subsystem sftp internal-sftp",
		"",
	), "\n")
}

// keygen makes an ed25519 key pair with ssh-keygen and writes it as name
// and name.pub to sub of role r's directory, whose programs use it
// (generate), and returns the private key's path there and the public
// key.
func keygen(ctx context.Context, r *role.Role, sub, name, comment string) (path string, pub []byte, err error) {
	err = generate(ctx, sub, func(scratch string) error {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
			"-f", filepath.Join(scratch, name)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}, placement{r, []string{name, name + ".pub"}})
	if err != nil {
		return "", nil, fmt.Errorf("ssh-keygen %s: %w", name, err)
	}
	path = filepath.Join(r.Dir(), sub, name)
	if pub, err = role.ReadFile(ctx, r, path+".pub"); err != nil {
		return "", nil, fmt.Errorf("ssh-keygen %s: %w", name, err)
	}
	return path, pub, nil
}
