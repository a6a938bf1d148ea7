package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// OpenVPN is seed 002's OpenVPN 2.6, point to point over UDP: one openvpn
// per side, a tun device each with point-to-point addresses; every
// instrument aims at the server's inner address. In static-key mode a key
// generated per run and AES-256-CBC with HMAC-SHA1 (the only kind the
// mode has; 2.6 warns that 2.7 removes it); in TLS mode a per-run CA and
// EC certificates, and the data channel cipher of the variant.
type OpenVPN struct {
	tls    bool
	cipher string // the variant: "aes-256-gcm", …
	bin    string // the openvpn program (--openvpn); "" finds openvpn on PATH or in /usr/sbin
}

// ovpnOption is both OpenVPN transports' program option.
var ovpnOption = Option{Name: "openvpn", File: true, Roles: []string{topology.Client, topology.Server}, Usage: "openvpn program of the openvpn-static and openvpn-tls transports (default: openvpn on PATH, else /usr/sbin/openvpn)"}

// program is the openvpn program t runs.
func (t *OpenVPN) program() (string, error) {
	if t.bin != "" {
		if err := checkExecutable(t.bin); err != nil {
			return "", fmt.Errorf("--openvpn %s: %w", t.bin, err)
		}
		return t.bin, nil
	}
	return systemProgram("openvpn")
}

var (
	ovpnServer = innerAddr("openvpn-static, openvpn-tls", 1)
	ovpnClient = innerAddr("openvpn-static, openvpn-tls", 2)
)

const (
	ovpnPort  = 1194
	ovpnIface = "tun1"
	ovpnReady = time.Minute
)

var openVPNStaticSpec = Spec{
	Name:     "openvpn-static",
	Holds:    []string{"openvpn " + ovpnIface + ", " + innerRange("openvpn-static, openvpn-tls").String() + ", udp/1194"},
	Summary:  "SSH over OpenVPN 2.6 in static-key mode (UDP, AES-256-CBC + HMAC-SHA1)",
	Variants: []string{"aes-256-cbc"},
	Sets:     []string{"seed-002"},
	Options:  []Option{ovpnOption},
	New:      func(c Config) (Transport, error) { return &OpenVPN{cipher: c.Variant, bin: c.Options["openvpn"]}, nil },
}

var openVPNTLSSpec = Spec{
	Name:     "openvpn-tls",
	Holds:    []string{"openvpn " + ovpnIface + ", " + innerRange("openvpn-static, openvpn-tls").String() + ", udp/1194"},
	Summary:  "SSH over OpenVPN 2.6 in TLS mode (UDP, per-run EC certificates, the variant's data channel cipher)",
	Variants: []string{"aes-256-gcm", "chacha20-poly1305", "aes-128-gcm"},
	Sets:     []string{"seed-002"},
	Options:  []Option{ovpnOption},
	New: func(c Config) (Transport, error) {
		return &OpenVPN{tls: true, cipher: c.Variant, bin: c.Options["openvpn"]}, nil
	},
}

func (t *OpenVPN) spec() Spec {
	if t.tls {
		return openVPNTLSSpec
	}
	return openVPNStaticSpec
}

func (t *OpenVPN) Name() string { return t.spec().RowName(t.cipher) }
func (t *OpenVPN) Label() string {
	if t.tls {
		return "SSH over OpenVPN (TLS, " + t.cipher + ")"
	}
	return "SSH over OpenVPN (static key)"
}
func (t *OpenVPN) About() string {
	mode := "static-key mode"
	if t.tls {
		mode = "TLS mode (the data channel's cipher negotiated over a per-run PKI)"
	}
	return "is OpenVPN in " + mode + " over UDP: one single-threaded openvpn per namespace encrypts every packet in userspace, in the transport's cgroups."
}

// ovpnTool is how a host says which openvpn it has.
var ovpnTool = preflight.Tool{Name: "openvpn", Args: []string{"--version"}, Prefix: "OpenVPN ", Package: "openvpn"}

// HostNeeds: the hosts state their openvpn's version, unless --openvpn
// names another program than theirs.
func (t *OpenVPN) HostNeeds() HostNeeds {
	if t.bin != "" {
		return HostNeeds{}
	}
	return HostNeeds{Programs: []preflight.Tool{ovpnTool}}
}

func (t *OpenVPN) Check() error {
	var missing []string
	if _, err := t.program(); err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := os.Stat(tunDevice); err != nil {
		missing = append(missing, "needs "+tunDevice+": "+err.Error())
	}
	if len(missing) > 0 {
		return &UnavailableError{Transport: t.Name(), Reason: strings.Join(missing, "; "), Fix: "install openvpn (scripts/install-deps.sh); load tun"}
	}
	return nil
}

// The data channel's cipher and HMAC as openvpn reports them once it set
// them up: what it uses, not what was configured. An AEAD cipher has no
// separate HMAC line.
var (
	ovpnCipherLine = regexp.MustCompile(`(?:Outgoing Data Channel|Data Channel Encrypt|Outgoing Static Key Encryption): Cipher '([^']+)'`)
	// TLS mode: "Control Channel: TLSv1.3, cipher TLSv1.3 TLS_AES_256_GCM_SHA384, …".
	ovpnControlLine = regexp.MustCompile(`Control Channel: (TLS[^,]*), cipher \S+ (\S+),`)
	ovpnHMACLine    = regexp.MustCompile(`(?:Data Channel Encrypt|Outgoing Static Key Encryption): Using \d+ bit message hash '([^']+)'`)
)

func (t *OpenVPN) Up(ctx context.Context, tb *Testbed) (path *Path, err error) {
	ctx, cancel := context.WithTimeout(ctx, ovpnReady)
	defer cancel()
	bin, err := t.program()
	if err != nil {
		return nil, fmt.Errorf("openvpn: %w", err)
	}
	server, client, err := t.modeArgs(ctx, bin, t.spec().Name, tb.Roles[topology.Server], tb.Roles[topology.Client])
	if err != nil {
		return nil, err
	}
	u := &ovpnUp{}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	// The daemons' openvpn: the one asked for (a build's: its copy on each
	// role's host), else the roles' hosts find their own (bin, this
	// host's, makes the static key).
	common := []string{"--dev", ovpnIface, "--dev-type", "tun", "--proto", "udp",
		"--verb", "4", // the data channel's cipher and HMAC are logged from 4 up
		"--allow-compression", "no"}
	daemon := func(role string) []string {
		return append([]string{tb.ProgramAt(role, cmp.Or(t.bin, "openvpn"))}, common...)
	}
	logName := strings.ReplaceAll(t.Name(), ":", "-")
	cli, srv := tb.Roles[topology.Client], tb.Roles[topology.Server]
	serverSpec := srv.Program(logName, append(append(daemon(topology.Server), server...),
		"--lport", strconv.Itoa(ovpnPort), "--ifconfig", ovpnServer.String(), ovpnClient.String())...)
	if u.server, err = srv.Start(ctx, serverSpec); err != nil {
		return nil, err
	}
	clientSpec := cli.Program(logName, append(append(daemon(topology.Client), client...),
		"--remote", srv.Addr().String(), strconv.Itoa(ovpnPort), "--nobind",
		"--ifconfig", ovpnClient.String(), ovpnServer.String())...)
	if u.client, err = cli.Start(ctx, clientSpec); err != nil {
		return nil, err
	}
	if err := cli.WaitTCP(ctx, net.JoinHostPort(ovpnServer.String(), strconv.Itoa(SSHPort)), u.client); err != nil {
		return nil, fmt.Errorf("openvpn: sshd through the tunnel (logs: %s, %s): %w", clientSpec.Log, serverSpec.Log, err)
	}
	log, err := role.ReadFile(ctx, cli, clientSpec.Log)
	if err != nil {
		return nil, fmt.Errorf("openvpn: %w", err)
	}
	suite, err := t.negotiated(log)
	if err != nil {
		return nil, fmt.Errorf("openvpn: %w (log: %s)", err, clientSpec.Log)
	}
	mode, facts := "static key", results.Facts{{Key: t.Name() + " cipher", Value: suite}}
	if t.tls {
		mode = "TLS"
		if m := lastSubmatch(ovpnControlLine, log); m != nil {
			facts = append(facts, results.Fact{Key: t.Name() + " control channel", Value: m[1] + " " + m[2]})
		}
	}
	if t.bin != "" {
		// A chosen program (a build) states its own version.
		facts = append(facts, results.Fact{Key: "openvpn", Value: ovpnVersion(t.bin)})
	}
	return &Path{
		Target:  DirectTarget(ovpnServer.String()),
		Facts:   facts,
		Label:   "SSH over OpenVPN (" + mode + ", " + suite + ")",
		Carried: LinkBytes(cli, ovpnIface),
		Procs: []RSSProc{
			tb.Proc(topology.Client, "openvpn", u.client),
			tb.Proc(topology.Server, "openvpn", u.server),
		},
		// The server's openvpn started again with the same arguments (its
		// key, port and addresses); it serves UDP, so Start returns once
		// the process runs.
		Restarts: Restarts{PieceServer: &restartable{r: srv, spec: serverSpec, p: &u.server, what: "the server's openvpn"}},
		Close:    u.close,
	}, nil
}

// ovpnVersion is the first line of `openvpn --version` ("OpenVPN 2.6.9
// x86_64-pc-linux-gnu …"), or "" when it says nothing.
func ovpnVersion(bin string) string {
	out, _ := exec.Command(bin, "--version").Output() // exits 1 after printing
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// modeArgs makes the mode's keys in sub of each role's directory (once per
// run) for the server and client roles and returns the server's and the
// client's mode options.
func (t *OpenVPN) modeArgs(ctx context.Context, bin, sub string, srv, cli *role.Role) (server, client []string, err error) {
	if !t.tls {
		key := func(r *role.Role) string { return filepath.Join(r.Dir(), sub, "static.key") }
		if _, err := role.ReadFile(ctx, cli, key(cli)); err != nil {
			err := generate(ctx, sub, func(scratch string) error {
				if out, err := exec.Command(bin, "--genkey", "secret", filepath.Join(scratch, "static.key")).CombinedOutput(); err != nil {
					return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
				}
				return nil
			}, placement{srv, []string{"static.key"}}, placement{cli, []string{"static.key"}})
			if err != nil {
				return nil, nil, fmt.Errorf("openvpn --genkey: %w", err)
			}
		}
		mode := []string{"--cipher", "AES-256-CBC", "--auth", "SHA1"}
		return append([]string{"--secret", key(srv)}, mode...), append([]string{"--secret", key(cli)}, mode...), nil
	}
	pki, err := writeOpenVPNPKI(ctx, sub, srv, cli)
	if err != nil {
		return nil, nil, fmt.Errorf("openvpn: certificates: %w", err)
	}
	cipher := strings.ToUpper(t.cipher)
	// Both sides offer only the variant's cipher: the negotiation can
	// settle on nothing else, and negotiated() checks that it did.
	mode := []string{"--dh", "none", "--data-ciphers", cipher, "--data-ciphers-fallback", cipher}
	server = append(slices.Clone(mode), "--ca", pki.Server.CA, "--tls-server", "--cert", pki.Server.Cert, "--key", pki.Server.Key, "--remote-cert-tls", "client")
	client = append(slices.Clone(mode), "--ca", pki.Client.CA, "--tls-client", "--cert", pki.Client.Cert, "--key", pki.Client.Key, "--remote-cert-tls", "server")
	return server, client, nil
}

// negotiated reads the data channel's suite from the client's log: the
// newest report, as one log holds every condition's path.
func (t *OpenVPN) negotiated(log []byte) (string, error) {
	cipher := lastSubmatch(ovpnCipherLine, log)
	if cipher == nil {
		return "", errors.New("its log does not report the data channel's cipher")
	}
	if t.tls {
		if !strings.EqualFold(cipher[1], t.cipher) {
			return "", fmt.Errorf("negotiated data channel cipher %s, not %s", cipher[1], strings.ToUpper(t.cipher))
		}
		return cipher[1], nil
	}
	hmac := lastSubmatch(ovpnHMACLine, log)
	if hmac == nil {
		return "", errors.New("its log does not report the data channel's HMAC")
	}
	return cipher[1] + "/" + hmac[1], nil
}

type ovpnUp struct {
	server, client *proc.Process
	once           sync.Once
	err            error
}

// close stops both openvpn processes; each removes its tun device.
func (u *ovpnUp) close() error {
	u.once.Do(func() { u.err = stopAll(u.client, u.server) })
	return u.err
}
