package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
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

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// StrongSwan is seed 002's strongSwan row: IKEv2 with a pre-shared key,
// one charon-systemd per namespace, a tunnel-mode CHILD_SA between two
// inner /32s (each on its namespace's lo), ESP in userspace through
// kernel-libipsec (a TUN device, ipsec0, and routes in table 220),
// UDP-encapsulated. Every instrument aims at the server's inner address.
//
// strongswan-kernel is the same with the kernel's ESP (kernel-netlink, no
// libipsec, plain ESP without UDP encapsulation), where the kernel has it.
type StrongSwan struct {
	variant string
	kernel  bool // ESP in the kernel (xfrm) instead of libipsec
}

// The tunnel's inner addresses: the traffic selectors.
var (
	ssServer = innerAddr("strongswan, strongswan-kernel", 1)
	ssClient = innerAddr("strongswan, strongswan-kernel", 2)
)

const (
	ssIface    = "ipsec0" // the TUN device kernel-libipsec creates
	ssConn     = "twnsb"  // the IKE connection's and the CHILD_SA's name
	ssReady    = time.Minute
	ssLibipsec = "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so"
	// The IKE SA's proposal is fixed: only the ESP one is measured.
	ssIKEProposal = "aes256gcm16-prfsha256-x25519"
	// kernel-libipsec is loaded before kernel-netlink so that it, not the
	// kernel's XFRM (which lacks ESP here and would black-hole silently),
	// is the IPsec backend; kernel-netlink only does addresses and routes.
	// The "!" makes a plugin critical: charon refuses to start without it.
	ssPlugins = "random nonce openssl gcm chapoly aes sha1 sha2 hmac kdf pem pkcs1 x509 pubkey curve25519 kernel-libipsec! kernel-netlink socket-default! vici!"
	// With the kernel's ESP, kernel-netlink installs the SAs and policies.
	ssKernelPlugins = "random nonce openssl gcm chapoly aes sha1 sha2 hmac kdf pem pkcs1 x509 pubkey curve25519 kernel-netlink! socket-default! vici!"
)

// ssNegotiated is each variant's ESP proposal (its swanctl.conf spelling)
// as swanctl --list-sas reports it once negotiated (ChaCha20-Poly1305
// without a key size).
var ssNegotiated = map[string]string{
	"aes256gcm16":      "AES_GCM_16-256",
	"aes128gcm16":      "AES_GCM_16-128",
	"chacha20poly1305": "CHACHA20_POLY1305",
	"aes128-sha256":    "AES_CBC-128/HMAC_SHA2_256_128",
}

var strongSwanSpec = Spec{
	Name:     "strongswan",
	Holds:    []string{ikePorts, "charon " + innerRange("strongswan, strongswan-kernel").String()},
	Summary:  "SSH over strongSwan IKEv2 (PSK, tunnel mode, ESP in userspace through kernel-libipsec, UDP-encapsulated)",
	Variants: []string{"aes256gcm16", "aes128gcm16", "chacha20poly1305", "aes128-sha256"},
	Sets:     []string{"seed-002"},
	New:      func(c Config) (Transport, error) { return &StrongSwan{variant: c.Variant}, nil },
}

var strongSwanKernelSpec = Spec{
	Name:     "strongswan-kernel",
	Holds:    []string{ikePorts, "charon " + innerRange("strongswan, strongswan-kernel").String()},
	Summary:  "SSH over strongSwan IKEv2 (PSK, tunnel mode) with the kernel's ESP (a kernel with ESP)",
	Variants: []string{"aes128gcm16", "aes128-sha256", "chacha20poly1305"},
	Sets:     []string{"seed-002"},
	New:      func(c Config) (Transport, error) { return &StrongSwan{variant: c.Variant, kernel: true}, nil },
}

// ssESPAlgo is each variant's transform in ipsec.go's terms, for the
// kernel ESP probe.
var ssESPAlgo = map[string]string{
	"aes256gcm16": "aes-gcm-256", "aes128gcm16": "aes-gcm-128",
	"chacha20poly1305": "chacha20-poly1305", "aes128-sha256": "aes-cbc-128-sha256",
}

func (t *StrongSwan) spec() Spec {
	if t.kernel {
		return strongSwanKernelSpec
	}
	return strongSwanSpec
}

// esp names where ESP runs, for labels and facts.
func (t *StrongSwan) esp() string {
	if t.kernel {
		return "kernel ESP"
	}
	return "userspace ESP, libipsec"
}

func (t *StrongSwan) Name() string { return t.spec().RowName(t.variant) }
func (t *StrongSwan) Label() string {
	return "SSH over strongSwan (" + t.esp() + ", " + t.variant + ")"
}
func (t *StrongSwan) About() string {
	if t.kernel {
		return "is strongSwan IKEv2 keying the kernel's ESP: one charon-systemd per namespace negotiates, the kernel encrypts every packet, so the crypto's CPU shows only in host CPU."
	}
	return "is strongSwan IKEv2 with ESP in userspace (kernel-libipsec over a TUN device, UDP-encapsulated): one charon-systemd per namespace encrypts every packet, in the transport's cgroups."
}

// ssProgram finds charon-systemd, which Debian puts in /usr/sbin and
// other distributions under /usr/lib*/ipsec or /usr/libexec.
func ssProgram() (string, error) {
	if p, err := systemProgram("charon-systemd"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/lib/ipsec/charon-systemd", "/usr/libexec/ipsec/charon-systemd", "/usr/libexec/strongswan/charon-systemd"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("charon-systemd not found")
}

// ssProgramOp is ssProgram on a role's host.
var ssProgramOp = role.NewOp("strongswan.program", func(context.Context, role.Nothing) (string, error) { return ssProgram() })

func (t *StrongSwan) Check() error {
	var missing []string
	if _, err := ssProgram(); err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := systemProgram("swanctl"); err != nil {
		missing = append(missing, err.Error())
	}
	needs := []string{ssLibipsec, tunDevice}
	if t.kernel {
		needs = nil
	}
	for _, f := range needs {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, "needs "+f+": "+err.Error())
		}
	}
	if len(missing) > 0 {
		return &UnavailableError{Transport: t.Name(), Reason: strings.Join(missing, "; "),
			Fix: "install charon-systemd strongswan-swanctl libcharon-extra-plugins libstrongswan-standard-plugins libstrongswan-extra-plugins (scripts/install-deps.sh)"}
	}
	if t.kernel {
		return espAvailable(t.Name(), netlink.XFRM_MODE_TUNNEL, ssESPAlgo[t.variant])
	}
	return nil
}

// espLine is swanctl --list-sas's CHILD_SA line, e.g. "twnsb: #1, reqid 1,
// INSTALLED, TUNNEL-in-UDP, ESP:AES_GCM_16-256".
var espLine = regexp.MustCompile(`INSTALLED, [^,]+, ESP:([^\s,]+)`)

func (t *StrongSwan) Up(ctx context.Context, tb *Testbed) (path *Path, err error) {
	ctx, cancel := context.WithTimeout(ctx, ssReady)
	defer cancel()
	psk := make([]byte, 32)
	if _, err := rand.Read(psk); err != nil {
		return nil, fmt.Errorf("strongswan: psk: %w", err)
	}
	// swanctl by its name: the launcher looks it up on the role's host.
	u := &ssUp{tb: tb, swanctlBin: "swanctl", variant: t.variant, logName: strings.ReplaceAll(t.Name(), ":", "-")}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	// The server first: it must be listening when the client initiates.
	var restart *charonRestart
	for _, s := range []struct {
		role, peer       string
		inner, peerInner netip.Addr
		p                **proc.Process
	}{
		{topology.Server, topology.Client, ssServer, ssClient, &u.server},
		{topology.Client, topology.Server, ssClient, ssServer, &u.client},
	} {
		dir := filepath.Join(tb.Roles[s.role].Dir(), u.logName, s.role)
		r := tb.Roles[s.role]
		conf := ssConfig{dir: dir, local: r.Addr(), remote: tb.Roles[s.peer].Addr(),
			localTS: s.inner, remoteTS: s.peerInner, localID: s.role, remoteID: s.peer, esp: t.variant, psk: psk, kernel: t.kernel}
		if err := writeConf(ctx, r, conf.files()); err != nil {
			return nil, fmt.Errorf("strongswan: %w", err)
		}
		// Before charon starts, so it knows the address when it installs
		// the CHILD_SA's route with it as the source.
		if err := u.addInner(ctx, s.role, s.inner); err != nil {
			return nil, fmt.Errorf("strongswan: %s: inner address: %w", s.role, err)
		}
		// Where charon-systemd is depends on the distribution of the
		// role's host, which may not be this one's.
		charon, err := ssProgramOp.On(ctx, r, role.Nothing{})
		if err != nil {
			return nil, fmt.Errorf("strongswan: %s: %w", s.role, err)
		}
		spec := r.Program(u.logName, charon)
		spec.Env = conf.env()
		if *s.p, err = r.Start(ctx, spec); err != nil {
			return nil, fmt.Errorf("strongswan: %s: start charon: %w", s.role, err)
		}
		if err := waitUnix(ctx, r, conf.vici(), *s.p); err != nil {
			return nil, fmt.Errorf("strongswan: %s: charon's vici socket (log: %s): %w", s.role, spec.Log, err)
		}
		if _, err := u.swanctl(ctx, s.role, conf, "--load-all", "--file", filepath.Join(dir, "swanctl.conf")); err != nil {
			return nil, err
		}
		u.conf = append(u.conf, conf)
		if s.role == topology.Server {
			restart = &charonRestart{u: u, r: r, spec: spec, conf: conf}
		}
	}
	cliConf := u.conf[1]
	if _, err := u.swanctl(ctx, topology.Client, cliConf, "--initiate", "--child", ssConn); err != nil {
		return nil, err
	}
	cli := tb.Roles[topology.Client]
	if err := cli.WaitTCP(ctx, net.JoinHostPort(ssServer.String(), strconv.Itoa(SSHPort)), u.client); err != nil {
		return nil, fmt.Errorf("strongswan: sshd through the tunnel (log: %s): %w", filepath.Join(tb.LogDir, "client-"+u.logName+".log"), err)
	}
	// What was negotiated, read back from the client's charon.
	sas, err := u.swanctl(ctx, topology.Client, cliConf, "--list-sas", "--ike", ssConn)
	if err != nil {
		return nil, err
	}
	m := espLine.FindStringSubmatch(sas)
	if m == nil {
		return nil, fmt.Errorf("strongswan: swanctl --list-sas shows no installed ESP CHILD_SA: %q", sas)
	}
	esp := m[1]
	if want := ssNegotiated[t.variant]; esp != want {
		return nil, fmt.Errorf("strongswan %s: negotiated ESP %s, not %s", t.variant, esp, want)
	}
	version, err := u.swanctl(ctx, topology.Client, cliConf, "--version", "--daemon")
	if err != nil {
		return nil, err
	}
	espWhere, carried, inKernel := "userspace (kernel-libipsec)", LinkBytes(cli, ssIface), ""
	if t.kernel {
		espWhere, carried, inKernel = "kernel (xfrm, keyed by charon)", espBytes(cli), "kernel ESP (xfrm), keyed by charon"
	}
	return &Path{
		Target: DirectTarget(ssServer.String()),
		Facts: results.Facts{
			{Key: strongSwanSpec.Name, Label: "strongSwan", Value: strings.TrimSpace(version)},
			{Key: "strongswan esp", Value: espWhere},
		},
		Label: "SSH over strongSwan (" + t.esp() + ", " + esp + ")",
		Procs: []RSSProc{
			tb.Proc(topology.Client, "charon", u.client),
			tb.Proc(topology.Server, "charon", u.server),
		},
		Carried:  carried,
		InKernel: inKernel,
		Close:    u.close,
		Restarts: Restarts{PieceServer: restart},
	}, nil
}

// charonRestart is the server's charon stopped and started again from its
// files, its connection loaded again: its IKE and ESP SAs go with it, as
// when a server's daemon restarts. Whether the tunnel comes back is the
// client's to find (its DPD or rekeying), which is what is timed.
type charonRestart struct {
	u    *ssUp
	r    *role.Role
	spec proc.Program
	conf ssConfig
}

func (c *charonRestart) What() string {
	return "the server's charon, with its IKE and ESP SAs"
}

func (c *charonRestart) Stop(context.Context) error {
	if c.u.server == nil {
		return errors.New("strongswan: the server's charon is not running")
	}
	return c.u.server.Stop(stopGrace)
}

func (c *charonRestart) Start(ctx context.Context) error {
	// The directory afresh: a socket the stopped charon left would pass
	// for the new one's being ready.
	if err := writeConf(ctx, c.r, c.conf.files()); err != nil {
		return fmt.Errorf("strongswan: server: %w", err)
	}
	p, err := c.r.Start(ctx, c.spec)
	if err != nil {
		return fmt.Errorf("strongswan: server: start charon again: %w", err)
	}
	c.u.server = p
	if err := waitUnix(ctx, c.r, c.conf.vici(), p); err != nil {
		return fmt.Errorf("strongswan: server: charon's vici socket (log: %s): %w", c.spec.Log, err)
	}
	_, err = c.u.swanctl(ctx, topology.Server, c.conf, "--load-all", "--file", filepath.Join(c.conf.dir, "swanctl.conf"))
	return err
}

// ssConfig is one side's strongswan.conf and swanctl.conf, in a directory
// of its own: nothing under /etc or the host's /run is read or written.
type ssConfig struct {
	dir                    string
	local, remote          netip.Addr // the IKE peers
	localTS, remoteTS      netip.Addr // the inner /32s
	localID, remoteID, esp string
	psk                    []byte
	kernel                 bool // the kernel's ESP: no libipsec, no UDP encapsulation
}

func (c ssConfig) vici() string { return filepath.Join(c.dir, "charon.vici") }
func (c ssConfig) uri() string  { return "unix://" + c.vici() }

// env points charon and swanctl at this side's files: STRONGSWAN_CONF
// (else /etc/strongswan.conf, whose vici socket is the host's
// /var/run/charon.vici) and SWANCTL_DIR (else swanctl --load-all reads
// credentials from /etc/swanctl; its complaints about the missing x509…
// subdirectories here are harmless: the PSK is in swanctl.conf).
func (c ssConfig) env() []string {
	return []string{"STRONGSWAN_CONF=" + filepath.Join(c.dir, "strongswan.conf"), "SWANCTL_DIR=" + c.dir}
}

// files are the side's directory: a socket left by this row's previous
// condition would pass for the new charon's being ready, and goes.
func (c ssConfig) files() confDir {
	plugins, encap := ssPlugins, "yes"
	if c.kernel {
		plugins, encap = ssKernelPlugins, "no"
	}
	// Logging to stderr lands in the role's log file; the journal is not
	// there to log to.
	strongswan := `# twnsbench strongswan
charon-systemd {
	load = ` + plugins + `
	plugins {
		vici {
			socket = ` + c.uri() + `
		}
	}
	journal {
		default = -1
	}
	filelog {
		stderr {
			default = 1
			ike_name = yes
			time_format = %b %e %T
		}
	}
}
swanctl {
	load = pem pkcs1 x509 pubkey openssl random
}
`
	// encap = yes: libipsec (5.9) carries ESP only inside UDP. Tunnel
	// mode: transport mode was refused (TS_UNACCEPTABLE) in seed 002.
	// mobike = no: nothing moves here, and charon would otherwise answer
	// every address change in the namespace with an update exchange.
	swan := fmt.Sprintf(`# twnsbench strongswan
connections {
	%[1]s {
		version = 2
		local_addrs = %[2]s
		remote_addrs = %[3]s
		encap = %[11]s
		mobike = no
		proposals = %[4]s
		local {
			auth = psk
			id = %[5]s
		}
		remote {
			auth = psk
			id = %[6]s
		}
		children {
			%[1]s {
				mode = tunnel
				local_ts = %[7]s/32
				remote_ts = %[8]s/32
				esp_proposals = %[9]s
			}
		}
	}
}
secrets {
	ike-%[1]s {
		id-1 = %[5]s
		id-2 = %[6]s
		secret = 0x%[10]s
	}
}
`, ssConn, c.local, c.remote, ssIKEProposal, c.localID, c.remoteID, c.localTS, c.remoteTS, c.esp, hex.EncodeToString(c.psk), encap)
	return confDir{
		Remove: []string{c.vici()},
		Dirs:   []string{c.dir},
		Files: []confFile{
			{Path: filepath.Join(c.dir, "strongswan.conf"), Data: []byte(strongswan)},
			{Path: filepath.Join(c.dir, "swanctl.conf"), Data: []byte(swan)},
		},
	}
}

type ssUp struct {
	tb             *Testbed
	swanctlBin     string
	variant        string
	logName        string // the charons' logs: LogDir/<role>-<logName>.log
	conf           []ssConfig
	server, client *proc.Process
	inner          map[string]netip.Addr // the inner address added to each role's lo
	once           sync.Once
	err            error
}

// swanctl runs one swanctl command against role's charon and returns its
// output; a failure quotes it.
func (u *ssUp) swanctl(ctx context.Context, role string, c ssConfig, args ...string) (string, error) {
	r := u.tb.Roles[role]
	spec := r.Program("swanctl-"+u.variant, append(append([]string{u.swanctlBin}, args...), "--uri", c.uri())...)
	spec.Env = c.env()
	res, err := r.RunProgram(ctx, spec)
	if err != nil {
		return "", fmt.Errorf("strongswan: %s: swanctl %s: %w: %s", role, args[0], err, strings.TrimSpace(string(res.Stdout)+string(res.Stderr)))
	}
	return string(res.Stdout), nil
}

// addInner puts the role's inner address on its lo, so that the
// traffic selector is a local address there: charon's route in table
// 220 (via ipsec0) takes it as its source, and the fixtures, listening on
// every address, answer on it.
func (u *ssUp) addInner(ctx context.Context, name string, a netip.Addr) error {
	if err := role.AddLoopback(ctx, u.tb.Roles[name], a); err != nil {
		return err
	}
	if u.inner == nil {
		u.inner = map[string]netip.Addr{}
	}
	u.inner[name] = a
	return nil
}

// close stops both charons (each removes its ipsec0, its routes and its
// table-220 rule) and removes the inner addresses.
func (u *ssUp) close() error {
	u.once.Do(func() {
		errs := []error{stopAll(u.client, u.server)}
		for name, a := range u.inner {
			if err := role.RemoveLoopback(context.Background(), u.tb.Roles[name], a); err != nil {
				errs = append(errs, fmt.Errorf("strongswan: %s: remove %s from lo: %w", name, a, err))
			}
		}
		u.err = errors.Join(errs...)
	})
	return u.err
}
