package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// OpenVPNStatic is seed 002's OpenVPN in static-key mode: one openvpn per
// side (UDP, a tun device each, point-to-point addresses), a pre-shared key
// generated per run, AES-256-CBC with HMAC-SHA1 (the only kind static mode
// has; OpenVPN 2.6 warns that 2.7 removes the mode). Every instrument aims
// at the server's inner address.
type OpenVPNStatic struct{}

var (
	ovpnServer = netip.MustParseAddr("10.97.0.1")
	ovpnClient = netip.MustParseAddr("10.97.0.2")
)

const (
	ovpnPort  = 1194
	ovpnIface = "tun1"
	ovpnReady = time.Minute
)

var openVPNStaticSpec = Spec{
	Name:     "openvpn-static",
	Summary:  "SSH over OpenVPN 2.6 in static-key mode (UDP, AES-256-CBC + HMAC-SHA1)",
	Variants: []string{"aes-256-cbc"},
	New:      func(Config) (Transport, error) { return OpenVPNStatic{}, nil },
}

func (OpenVPNStatic) Name() string  { return "openvpn-static" }
func (OpenVPNStatic) Label() string { return "SSH over OpenVPN (static key)" }
func (OpenVPNStatic) About() string {
	return "is OpenVPN in static-key mode over UDP: one single-threaded openvpn per namespace encrypts every packet in userspace, in the transport's cgroups."
}

func (t OpenVPNStatic) Check() error {
	var missing []string
	if _, err := systemProgram("openvpn"); err != nil {
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
// them up: what it uses, not what was configured.
var (
	ovpnCipherLine = regexp.MustCompile(`(?:Data Channel Encrypt|Outgoing Static Key Encryption): Cipher '([^']+)'`)
	ovpnHMACLine   = regexp.MustCompile(`(?:Data Channel Encrypt|Outgoing Static Key Encryption): Using \d+ bit message hash '([^']+)'`)
)

func (t OpenVPNStatic) Up(ctx context.Context, env *Testbed) (path *Path, err error) {
	ctx, cancel := context.WithTimeout(ctx, ovpnReady)
	defer cancel()
	dir := filepath.Join(env.Dir, "openvpn-static")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("openvpn: %w", err)
	}
	bin, err := systemProgram("openvpn")
	if err != nil {
		return nil, fmt.Errorf("openvpn: %w", err)
	}
	key := filepath.Join(dir, "static.key")
	if _, err := os.Stat(key); errors.Is(err, os.ErrNotExist) {
		if out, err := exec.Command(bin, "--genkey", "secret", key).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("openvpn --genkey: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	u := &ovpnUp{}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	common := []string{bin, "--dev", ovpnIface, "--dev-type", "tun", "--proto", "udp", "--secret", key,
		"--cipher", "AES-256-CBC", "--auth", "SHA1", "--verb", "4", // 4: the data channel's cipher and HMAC are logged "--ping", "10",
		"--allow-compression", "no"}
	serverSpec := env.Spec(topology.Server, "openvpn-static", append(common,
		"--lport", strconv.Itoa(ovpnPort), "--ifconfig", ovpnServer.String(), ovpnClient.String())...)
	if u.server, err = proc.Start(serverSpec); err != nil {
		return nil, err
	}
	clientSpec := env.Spec(topology.Client, "openvpn-static", append(common,
		"--remote", env.Topo.Spec.Addr(topology.Server).String(), strconv.Itoa(ovpnPort), "--nobind",
		"--ifconfig", ovpnClient.String(), ovpnServer.String())...)
	if u.client, err = proc.Start(clientSpec); err != nil {
		return nil, err
	}
	cli := env.Topo.Roles[topology.Client].NS
	if err := proc.WaitTCP(ctx, cli, net.JoinHostPort(ovpnServer.String(), strconv.Itoa(SSHPort)), u.client); err != nil {
		return nil, fmt.Errorf("openvpn: sshd through the tunnel (logs: %s, %s): %w", clientSpec.Log, serverSpec.Log, err)
	}
	log, err := os.ReadFile(clientSpec.Log)
	if err != nil {
		return nil, fmt.Errorf("openvpn: %w", err)
	}
	cipher, hmac := lastSubmatch(ovpnCipherLine, log), lastSubmatch(ovpnHMACLine, log)
	if cipher == nil || hmac == nil {
		return nil, fmt.Errorf("openvpn: its log (%s) does not report the data channel's cipher and HMAC", clientSpec.Log)
	}
	suite := cipher[1] + "/" + hmac[1]
	return &Path{
		Target: DirectTarget(ovpnServer.String()),
		Facts:  map[string]string{"openvpn-static cipher": suite},
		Label:  "SSH over OpenVPN (static key, " + suite + ")",
		Procs: []RSSProc{
			{Key: "client / openvpn", PID: u.client.PID()},
			{Key: "server / openvpn", PID: u.server.PID()},
		},
		Close: u.close,
	}, nil
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
