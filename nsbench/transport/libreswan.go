package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Libreswan is seed 002's Libreswan row: IKEv2 with a pre-shared key, one
// pluto per namespace with its own configuration, secrets, NSS database
// and control socket, a tunnel-mode Child SA between two inner /32s (each
// on its namespace's lo) keying the kernel's ESP. Every instrument aims at
// the server's inner address.
//
// Debian's libreswan package conflicts with strongSwan's, so
// scripts/install-deps.sh unpacks it privately (LibreswanDir); a
// system-wide install is used when there is no private one.
type Libreswan struct{ variant string }

// Libreswan's inner addresses: the Child SA's traffic selectors.
var (
	lsServer = innerAddr("libreswan", 1)
	lsClient = innerAddr("libreswan", 2)
)

const (
	lsConn = "twnsb" // the connection's name in ipsec.conf and for whack
	// Each pluto tests its crypto and opens NSS before it listens: under a
	// loaded host's emulation (make vmtest) that took 10–30 s.
	lsReady = 90 * time.Second
	// The IKE SA's proposal is fixed, as strongSwan's: only ESP is measured.
	lsIKEProposal = "aes_gcm256-sha2_256-dh31"
	// LibreswanDirEnv overrides DefaultLibreswanDir (the tests', and
	// install-deps.sh's, TWNSBENCH_LIBRESWAN_DIR).
	LibreswanDirEnv = "TWNSBENCH_LIBRESWAN_DIR"
	// DefaultLibreswanDir is where scripts/install-deps.sh unpacks Debian's
	// libreswan package (dpkg-deb -x): its binaries are under usr/libexec/ipsec
	// and usr/sbin there.
	DefaultLibreswanDir = "/var/cache/twnsbench/libreswan"
)

// lsESPAlgo is each variant's ESP proposal (Libreswan's spelling, which
// is the variant's name) in ipsec.go's terms: the kernel probe, and what
// the kernel's SAs must hold.
var lsESPAlgo = map[string]string{
	"aes_gcm256":  "aes-gcm-256",
	"aes128-sha1": "aes-cbc-128-sha1",
}

var libreswanSpec = Spec{
	Name:     "libreswan",
	Holds:    []string{ikePorts, "pluto " + innerRange("libreswan").String()},
	Summary:  "SSH over Libreswan IKEv2 (PSK, tunnel mode, one pluto per namespace) keying the kernel's ESP (a kernel with ESP; Libreswan unpacked privately by scripts/install-deps.sh)",
	Variants: []string{"aes_gcm256", "aes128-sha1"},
	Sets:     []string{"seed-002"},
	New:      func(c Config) (Transport, error) { return &Libreswan{variant: c.Variant}, nil },
}

var _ Transport = (*Libreswan)(nil)

func (t *Libreswan) Name() string { return libreswanSpec.RowName(t.variant) }
func (t *Libreswan) Label() string {
	return "SSH over Libreswan (kernel ESP, " + t.variant + ")"
}
func (t *Libreswan) About() string {
	return "is Libreswan's pluto (IKEv2) keying the kernel's ESP: one pluto per namespace negotiates, the kernel encrypts every packet, so the crypto's CPU shows only in host CPU."
}

// LibreswanDir is the private unpack's root: $TWNSBENCH_LIBRESWAN_DIR, or
// DefaultLibreswanDir. root runs pluto from it, so the variable is
// honoured only when the directory and those above it are root's alone
// (proc.RootsPath).
func LibreswanDir() (string, error) {
	d := os.Getenv(LibreswanDirEnv)
	if d == "" {
		return DefaultLibreswanDir, nil
	}
	if err := proc.RootsPath(LibreswanDirEnv, d); err != nil {
		return "", err
	}
	return d, nil
}

// lsPrograms are the Libreswan programs a path runs, as found on one
// role's host (lsProgramsOp), whose distribution and unpack they are.
type lsPrograms struct {
	Root                  string // the unpack's root, "/" for a system install
	Pluto, Whack, Addconn string
	Certutil              string // NSS's, from libnss3-tools
	Version               string // Debian's package version, as install-deps.sh stamps an unpack
}

// libreswanPrograms finds pluto, whack and addconn in the private unpack,
// else in a system install, and NSS's certutil.
func libreswanPrograms() (lsPrograms, error) {
	var errs []string
	p := lsPrograms{}
	dir, err := LibreswanDir()
	if err != nil {
		return p, err
	}
	for _, root := range []string{dir, "/"} {
		exec := filepath.Join(root, "usr/libexec/ipsec")
		c := lsPrograms{Root: root, Pluto: filepath.Join(exec, "pluto"), Whack: filepath.Join(exec, "whack"), Addconn: filepath.Join(exec, "addconn")}
		missing := ""
		for _, f := range []string{c.Pluto, c.Whack, c.Addconn} {
			if fi, err := os.Stat(f); err != nil || fi.Mode()&0o111 == 0 {
				missing = f
				break
			}
		}
		if missing == "" {
			p = c
			break
		}
		errs = append(errs, "no "+missing)
	}
	if p.Pluto == "" {
		return p, errors.New(strings.Join(errs, ", "))
	}
	certutil, err := systemProgram("certutil")
	if err != nil {
		return p, err
	}
	p.Certutil = certutil
	if p.Root != "/" {
		v, _ := os.ReadFile(filepath.Join(p.Root, ".twnsbench-version"))
		p.Version = strings.TrimSpace(string(v))
	}
	return p, nil
}

// lsProgramsOp is libreswanPrograms on a role's host: the unpack, the
// system install and certutil of the machine that runs them.
var lsProgramsOp = role.NewOp("libreswan.programs", func(context.Context, role.Nothing) (lsPrograms, error) {
	return libreswanPrograms()
})

// Check probes the kernel's ESP first (no installing helps a kernel
// without it), then looks for the programs.
func (t *Libreswan) Check() error {
	if err := espAvailable(t.Name(), netlink.XFRM_MODE_TUNNEL, lsESPAlgo[t.variant]); err != nil {
		return err
	}
	if _, err := libreswanPrograms(); err != nil {
		return &UnavailableError{Transport: t.Name(), Reason: err.Error(),
			Fix: "scripts/install-deps.sh (unpacks Debian's libreswan into " + DefaultLibreswanDir + ", installs libnss3-tools and its libraries)"}
	}
	return nil
}

// established is whack --initiate's line for the Child SA, e.g.
// `"twnsb" #2: initiator established Child SA using #1; IPsec tunnel
// [10.91.0.2-10.91.0.2:0-65535 0] -> [...] {ESP=>0x1234 <0x5678
// xfrm=AES_GCM_16_256-NONE DPD=passive}`.
var established = regexp.MustCompile(`established Child SA.*xfrm=([A-Z0-9_]+-[A-Z0-9_]+)`)

func (t *Libreswan) Up(ctx context.Context, tb *Testbed) (path *Path, err error) {
	ctx, cancel := context.WithTimeout(ctx, lsReady)
	defer cancel()
	a, ok := espAlgos[lsESPAlgo[t.variant]]
	if !ok {
		return nil, fmt.Errorf("libreswan: unknown variant %q", t.variant)
	}
	psk := make([]byte, 32)
	if _, err := rand.Read(psk); err != nil {
		return nil, fmt.Errorf("libreswan: psk: %w", err)
	}
	u := &lsUp{tb: tb, progs: map[string]lsPrograms{}, logName: strings.ReplaceAll(t.Name(), ":", "-"), inner: &ipsecUp{tb: tb}}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	outer := func(role string) netip.Addr { return tb.Roles[role].Addr() }
	// Both plutos start at once (each takes seconds to test its crypto
	// and open NSS); the server is ready, listening, before the client
	// initiates.
	sides := []struct {
		role, peer       string
		inner, peerInner netip.Addr
		p                **proc.Process
	}{
		{topology.Server, topology.Client, lsServer, lsClient, &u.server},
		{topology.Client, topology.Server, lsClient, lsServer, &u.client},
	}
	for _, s := range sides {
		// Where pluto and certutil are depends on the role's host, which
		// may not be this one.
		progs, err := lsProgramsOp.On(ctx, tb.Roles[s.role], role.Nothing{})
		if err != nil {
			return nil, fmt.Errorf("libreswan: %s: %w", s.role, err)
		}
		u.progs[s.role] = progs
		c := lsConfig{dir: filepath.Join(tb.Roles[s.role].Dir(), u.logName, s.role), local: outer(s.role), remote: outer(s.peer),
			localTS: s.inner, remoteTS: s.peerInner, localID: s.role, remoteID: s.peer, esp: t.variant, psk: psk}
		if err := writeConf(ctx, tb.Roles[s.role], c.files()); err != nil {
			return nil, fmt.Errorf("libreswan: %w", err)
		}
		if _, err := u.run(ctx, s.role, progs.Certutil, "-N", "-d", "sql:"+c.nss(), "--empty-password"); err != nil {
			return nil, err
		}
		// The inner address on lo and the route to the peer's through the
		// peer's outer address, with the inner one as source: pluto's
		// updown script, which would add that route, is disabled (it is
		// `ipsec _updown`, found on PATH: perhaps strongSwan's ipsec).
		u.inner.xfrm = append(u.inner.xfrm, s.role) // pluto's SAs and policies, flushed after it stops
		if err := u.inner.addInner(ctx, s.role, s.inner, s.peerInner, outer(s.peer)); err != nil {
			return nil, fmt.Errorf("libreswan: %s: inner address: %w", s.role, err)
		}
		spec := tb.Program(s.role, u.logName, progs.Pluto, "--nofork", "--stderrlog",
			"--config", c.conf(), "--secretsfile", c.secrets(), "--ipsecdir", c.dir,
			"--rundir", c.run(), "--nssdir", c.nss(), "--dumpdir", c.run(), "--no-dnssec")
		spec.Mounts = append(spec.Mounts, progs.mounts()...)
		if *s.p, err = tb.Roles[s.role].Start(ctx, spec); err != nil {
			return nil, fmt.Errorf("libreswan: %s: start pluto: %w", s.role, err)
		}
		u.conf = append(u.conf, c)
	}
	for i, s := range sides {
		c := u.conf[i]
		if err := waitUnix(ctx, tb.Roles[s.role], c.ctl(), *s.p); err != nil {
			return nil, fmt.Errorf("libreswan: %s: pluto's control socket (log: %s): %w", s.role, filepath.Join(tb.LogDir, s.role+"-"+u.logName+".log"), err)
		}
		// The connection, then --listen (pluto takes its interfaces and
		// reads its secrets), each finished before the next step. pluto's
		// own `addconn --autoall` also listens, but asynchronously; it adds
		// nothing (auto=ignore): a second add would replace the
		// connection, and the Child SA with it, whenever it came.
		if _, err := u.run(ctx, s.role, u.progs[s.role].Addconn, "--config", c.conf(), "--ctlsocket", c.ctl(), lsConn); err != nil {
			return nil, err
		}
		if _, err := u.run(ctx, s.role, u.progs[s.role].Whack, "--ctlsocket", c.ctl(), "--listen"); err != nil {
			return nil, err
		}
	}
	cli := tb.Roles[topology.Client]
	out, err := u.run(ctx, topology.Client, u.progs[topology.Client].Whack, "--ctlsocket", u.conf[1].ctl(), "--initiate", "--name", lsConn)
	if err != nil {
		return nil, err
	}
	m := established.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("libreswan: whack --initiate did not establish the Child SA: %q", strings.TrimSpace(out))
	}
	negotiated := m[1]
	if err := cli.WaitTCP(ctx, net.JoinHostPort(lsServer.String(), strconv.Itoa(SSHPort)), u.client); err != nil {
		return nil, fmt.Errorf("libreswan: sshd through the tunnel (log: %s): %w", filepath.Join(tb.LogDir, "client-"+u.logName+".log"), err)
	}
	// What the kernel holds, read back: the label names it, and it must be
	// the variant's transform, in tunnel mode, one SA per direction.
	k, err := a.newKeys()
	if err != nil {
		return nil, fmt.Errorf("libreswan: %w", err)
	}
	want := describe(*a.state(lsClient, lsServer, 1, netlink.XFRM_MODE_TUNNEL, k))
	held, err := checkHeld(ctx, tb, []string{topology.Server, topology.Client}, 2, netlink.XFRM_MODE_TUNNEL, want)
	if err != nil {
		return nil, fmt.Errorf("libreswan %s: %w", t.variant, err)
	}
	carried := espBytes(cli)
	// sshd's handshake must have crossed the SAs: else the policies do not
	// hold the path and the rows would measure the bare network.
	if n, err := carried(); err != nil || n == 0 {
		return nil, fmt.Errorf("libreswan: the client's SAs carried %d bytes of the SSH handshake (%v): the traffic bypassed ESP", n, err)
	}
	version, err := u.run(ctx, topology.Client, u.progs[topology.Client].Whack, "--version")
	if err != nil {
		return nil, err
	}
	return &Path{
		Target: DirectTarget(lsServer.String()),
		Facts: results.Facts{
			{Key: libreswanSpec.Name, Label: "Libreswan", Value: strings.TrimSpace(version) + u.progs[topology.Client].origin()},
			{Key: "libreswan esp", Value: fmt.Sprintf("kernel (xfrm, keyed by pluto), tunnel mode, %s (pluto: %s)", held, negotiated)},
		},
		Label: fmt.Sprintf("SSH over Libreswan (kernel ESP, tunnel, %s, 2 SAs per side)", held),
		Procs: []RSSProc{
			tb.Proc(topology.Client, "pluto", u.client),
			tb.Proc(topology.Server, "pluto", u.server),
		},
		Carried:  carried,
		InKernel: "kernel ESP (xfrm), keyed by pluto",
		Close:    u.close,
	}, nil
}

// mounts are pluto's private view of its compiled-in paths. Whatever it
// might still write under /run/pluto lands in a tmpfs of its own mount
// namespace. It runs `/usr/libexec/ipsec/addconn --autoall` once it
// listens (and exits when that program is missing): a private unpack's
// usr/libexec is laid over the host's, read-only, in that namespace only.
func (p lsPrograms) mounts() []ns.Mount {
	m := []ns.Mount{{Kind: "tmpfs", Target: "/run"}}
	if p.Root != "/" {
		m = append(m, ns.Mount{Kind: "overlay", Source: filepath.Join(p.Root, "usr/libexec"), Target: "/usr/libexec"})
	}
	return m
}

// origin says where the programs came from: the private unpack (with
// Debian's package version, which install-deps.sh stamps) or the system.
func (p lsPrograms) origin() string {
	switch {
	case p.Root == "/":
		return " (system install)"
	case p.Version != "":
		return " (Debian " + p.Version + ", unpacked in " + p.Root + ")"
	}
	return " (unpacked in " + p.Root + ")"
}

// lsConfig is one side's ipsec.conf, ipsec.secrets, NSS database and run
// directory, in a directory of its own: pluto is given every path, so
// neither /etc/ipsec.* nor /var/lib/ipsec nor the host's /run/pluto is
// read or written.
type lsConfig struct {
	dir                    string
	local, remote          netip.Addr // the IKE peers
	localTS, remoteTS      netip.Addr // the inner /32s
	localID, remoteID, esp string
	psk                    []byte
}

func (c lsConfig) conf() string    { return filepath.Join(c.dir, "ipsec.conf") }
func (c lsConfig) secrets() string { return filepath.Join(c.dir, "ipsec.secrets") }
func (c lsConfig) nss() string     { return filepath.Join(c.dir, "nss") }
func (c lsConfig) run() string     { return filepath.Join(c.dir, "run") }
func (c lsConfig) ctl() string     { return filepath.Join(c.run(), "pluto.ctl") }

// files are the side's directory made afresh: the previous condition's
// NSS database and control socket (which would pass for the new pluto's
// being ready) go.
func (c lsConfig) files() confDir {
	// leftupdown=%disabled: no updown script (routes come from Up).
	// encapsulation=no: plain ESP, as strongswan-kernel. mobike=no:
	// nothing moves here. nic-offload=no: veths have no ESP offload.
	// dnssec-enable=no: nothing is resolved, and no root key is needed.
	conf := fmt.Sprintf(`# twnsbench libreswan
config setup
	dnssec-enable=no
	uniqueids=yes

conn %[1]s
	ikev2=yes
	authby=secret
	type=tunnel
	left=%[2]s
	leftid=@%[3]s
	leftsubnet=%[4]s/32
	leftupdown=%%disabled
	right=%[5]s
	rightid=@%[6]s
	rightsubnet=%[7]s/32
	rightupdown=%%disabled
	ike=%[8]s
	esp=%[9]s
	encapsulation=no
	mobike=no
	nic-offload=no
	auto=ignore
`, lsConn, c.local, c.localID, c.localTS, c.remote, c.remoteID, c.remoteTS, lsIKEProposal, c.esp)
	secrets := fmt.Sprintf("@%s @%s : PSK \"%s\"\n", c.localID, c.remoteID, hex.EncodeToString(c.psk))
	return confDir{
		Remove: []string{c.dir},
		Dirs:   []string{c.nss(), c.run()},
		Files:  []confFile{{Path: c.conf(), Data: []byte(conf)}, {Path: c.secrets(), Data: []byte(secrets)}},
	}
}

type lsUp struct {
	tb             *Testbed
	progs          map[string]lsPrograms // by role: each found on its host
	logName        string                // the plutos' logs: LogDir/<role>-<logName>.log
	conf           []lsConfig
	server, client *proc.Process
	inner          *ipsecUp // the inner addresses and routes; the SAs to flush
	once           sync.Once
	err            error
}

// run runs one program (certutil, addconn, whack) in role and
// returns its output; a failure quotes it.
func (u *lsUp) run(ctx context.Context, role, prog string, args ...string) (string, error) {
	r := u.tb.Roles[role]
	res, err := r.RunProgram(ctx, r.Program(u.logName+"-tools", append([]string{prog}, args...)...))
	out := string(res.Stdout) + string(res.Stderr)
	if err != nil {
		return "", fmt.Errorf("libreswan: %s: %s %s: %w: %s", role, filepath.Base(prog), args[0], err, strings.TrimSpace(out))
	}
	return out, nil
}

// close stops both plutos (each deletes its SAs and policies as it
// shuts down), then flushes what a killed one would leave and removes
// the inner addresses and routes. The files stay in the run's directory.
func (u *lsUp) close() error {
	u.once.Do(func() {
		u.err = errors.Join(stopAll(u.client, u.server), u.inner.close())
	})
	return u.err
}
