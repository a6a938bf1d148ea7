// Package relay assembles Tunnel Whisperer's relay in the relay role's
// namespace, as tw's relay install would on a VM but without apt, ACME,
// systemd or the internet: a CA of the run and a leaf for the relay's name
// (pki.go); Caddy, Xray and sshd configurations rendered from the tenant
// server's identity as pure functions (render.go); and the three daemons,
// validated by the real binaries first and then started as children in the
// relay role's cgroup (this file). Every file goes to the relay role's
// host through the Launcher, and every program runs there: the relay
// may be another machine than the one assembling it.
//
// Start order and its reverse, Stop:
//
//	write files and the login account (on the relay's host)
//	→ validate (sshd -t, xray run -test, caddy validate)
//	→ sshd (127.0.0.1:22) → Xray (127.0.0.1:10085, VLESS inbound)
//	→ Caddy (:443)
//
// sshd forks one session process per reverse tunnel; it is born in sshd's
// cgroup, so the relay role's CPU accounting includes it.
package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// Bins are the relay's programs, as absolute paths.
type Bins struct {
	Caddy, Xray, SSHD string
}

// Launcher runs programs in the relay role (its namespace and cgroup)
// and writes the files they read there, on the role's host: the relay
// reaches its role only through it.
type Launcher interface {
	// Program describes argv run as name in the relay role, with the
	// role's hosts file and a log file named after name.
	Program(name string, argv ...string) proc.Program
	// Start starts a daemon and waits until addr accepts TCP inside the
	// relay namespace; if it does not, it stops the daemon.
	Start(ctx context.Context, spec proc.Program, addr string) (*proc.Process, error)
	// Run runs a program of the role (from Program) and waits for it.
	Run(ctx context.Context, spec proc.Program) (proc.Result, error)
	// WriteFile writes a file the role's programs read.
	WriteFile(ctx context.Context, path string, data []byte, perm os.FileMode) error
	// MkdirAll makes a directory and its parents.
	MkdirAll(ctx context.Context, path string, perm os.FileMode) error
	// Account makes the login user, which exists only inside sshd's
	// mount namespace, in dir (account.SSHD) and returns the mounts that
	// show it to sshd.
	Account(ctx context.Context, dir, user string) ([]ns.Mount, error)
}

// Proc is one of the relay's daemons, for the memory table.
type Proc struct {
	Key string // "relay / caddy"
	PID int
}

// Relay is a running relay.
type Relay struct {
	cfg   Config
	procs []Proc
	ps    []*proc.Process
}

const (
	stopGrace       = 3 * time.Second
	validateTimeout = 60 * time.Second
)

// Start writes the relay's files into cfg.Dir on the relay role's host,
// validates them with the real programs there, and starts sshd, Xray and
// Caddy, each waited for on its port. On failure it stops what it had
// started; the files stay in the role's directory for the post-mortem.
func Start(ctx context.Context, cfg Config, bins Bins, l Launcher) (r *Relay, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(string(cfg.HostKey), "-----BEGIN OPENSSH PRIVATE KEY-----") {
		return nil, errors.New("relay config: no sshd host key (NewHostKey)")
	}
	acct, err := writeFiles(ctx, cfg, l)
	if err != nil {
		return nil, err
	}
	r = &Relay{cfg: cfg}
	defer func() {
		if err != nil {
			r.Stop()
			r = nil
		}
	}()
	sshd := l.Program("sshd", bins.SSHD, "-D", "-e", "-f", cfg.SSHDConfigPath())
	sshd.Mounts = append(sshd.Mounts, acct...)
	xray := l.Program("xray", bins.Xray, "run", "-config", cfg.XrayConfigPath())
	caddy := l.Program("caddy", bins.Caddy, "run", "--adapter", "caddyfile", "--config", cfg.CaddyfilePath())
	caddy.Env = append(caddy.Env, caddyEnv(cfg)...)

	if err := validate(ctx, l, sshd, "sshd -t", bins.SSHD, "-t", "-f", cfg.SSHDConfigPath()); err != nil {
		return r, err
	}
	if err := validate(ctx, l, xray, "xray run -test", bins.Xray, "run", "-test", "-config", cfg.XrayConfigPath()); err != nil {
		return r, err
	}
	if err := validate(ctx, l, caddy, "caddy validate", bins.Caddy, "validate", "--adapter", "caddyfile", "--config", cfg.CaddyfilePath()); err != nil {
		return r, err
	}

	if err := r.start(ctx, l, "sshd", sshd, SSHPort); err != nil {
		return r, err
	}
	if err := r.start(ctx, l, "xray", xray, cfg.VlessPort()); err != nil {
		return r, err
	}
	if err := r.start(ctx, l, "caddy", caddy, HTTPSPort); err != nil {
		return r, err
	}
	return r, nil
}

func (r *Relay) start(ctx context.Context, l Launcher, name string, spec proc.Program, port int) error {
	p, err := l.Start(ctx, spec, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	r.ps = append(r.ps, p)
	r.procs = append(r.procs, Proc{Key: "relay / " + name, PID: p.PID()})
	return nil
}

// validate runs a daemon's own configuration check with the daemon's
// environment and mounts, in the relay namespace.
func validate(ctx context.Context, l Launcher, daemon proc.Program, what string, argv ...string) error {
	ctx, cancel := context.WithTimeout(ctx, validateTimeout)
	defer cancel()
	spec := l.Program(filepath.Base(argv[0])+"-validate", argv...)
	spec.Env, spec.Mounts = daemon.Env, daemon.Mounts
	res, err := l.Run(ctx, spec)
	if err != nil {
		return fmt.Errorf("relay: %s: %v: %s", what, err, lastLines(string(res.Stdout)+string(res.Stderr), 3))
	}
	return nil
}

// Procs are the relay's daemons in start order.
func (r *Relay) Procs() []Proc { return r.procs }

// Stop stops Caddy, Xray and sshd (reverse start order). sshd's session
// processes end with their connections, which Xray's exit cuts. Safe to
// call twice.
func (r *Relay) Stop() error {
	var errs []error
	for i := len(r.ps) - 1; i >= 0; i-- {
		errs = append(errs, r.ps[i].Stop(stopGrace))
	}
	return errors.Join(errs...)
}

// caddyEnv keeps Caddy's home, configuration and data (autosave, locks)
// inside the relay's directory.
func caddyEnv(cfg Config) []string {
	base := filepath.Join(cfg.Dir, "caddy")
	return []string{
		"HOME=" + filepath.Join(base, "home"),
		"XDG_CONFIG_HOME=" + filepath.Join(base, "config"),
		"XDG_DATA_HOME=" + filepath.Join(base, "data"),
		"XDG_CACHE_HOME=" + filepath.Join(base, "cache"),
	}
}

// writeFiles writes the rendered configuration, the tenant's CA and
// sshd's host key in the relay role, makes the tenant's login account
// there, and returns the account's mounts.
func writeFiles(ctx context.Context, cfg Config, l Launcher) ([]ns.Mount, error) {
	if err := writeConfigs(ctx, cfg, l); err != nil {
		return nil, err
	}
	// The same key on every start of a run (cfg.HostKey): it is the same
	// relay, and a tw server that pinned its key on the first start must
	// find it again.
	if err := l.WriteFile(ctx, cfg.HostKeyPath(), cfg.HostKey, 0o600); err != nil {
		return nil, fmt.Errorf("relay: host key: %w", err)
	}
	acct, err := l.Account(ctx, filepath.Join(cfg.Dir, "sshd", "account"), cfg.SSHUser)
	if err != nil {
		return nil, fmt.Errorf("relay: account %s: %w", cfg.SSHUser, err)
	}
	return acct, nil
}

// writeConfigs writes the rendered configuration and the tenant's CA in
// the relay role, in directories of its directory cfg.Dir.
func writeConfigs(ctx context.Context, cfg Config, l Launcher) error {
	for _, d := range []string{"tls", "sshd", "caddy/storage", "caddy/home", "caddy/config", "caddy/data", "caddy/cache"} {
		if err := l.MkdirAll(ctx, filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return fmt.Errorf("relay: %w", err)
		}
	}
	for _, f := range []struct {
		path, text string
		mode       os.FileMode
	}{
		{cfg.TenantCAPath(), cfg.Tenant.CACertPEM, 0o644},
		{cfg.CaddyfilePath(), cfg.Caddyfile(), 0o644},
		{cfg.XrayConfigPath(), cfg.XrayConfig(), 0o644},
		{cfg.SSHDConfigPath(), cfg.SSHDConfig(), 0o644},
		{cfg.AuthorizedKeysPath(), cfg.AuthorizedKeys(), 0o644},
	} {
		if err := l.WriteFile(ctx, f.path, []byte(f.text), f.mode); err != nil {
			return fmt.Errorf("relay: %w", err)
		}
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
