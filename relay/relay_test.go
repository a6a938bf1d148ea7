package relay

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/account"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/pki"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The relay starts its sshd through the namespace launcher (for the
// tenant account's private mounts): this test binary serves as it
// (nstest.Main), and fails the package when a test leaves anything.
func TestMain(m *testing.M) { nstest.Main(m) }

// testLauncher runs the relay's daemons in one namespace, logging into dir.
type testLauncher struct {
	n   *ns.NS
	dir string
}

func (l testLauncher) Program(name string, argv ...string) proc.Program {
	return proc.Program{Name: "relay/" + name, NetNS: l.n.Path(), Argv: argv, Log: filepath.Join(l.dir, name+".log")}
}

func (l testLauncher) Start(ctx context.Context, spec proc.Program, addr string) (*proc.Process, error) {
	p, err := proc.Start(spec)
	if err != nil {
		return nil, err
	}
	if err := proc.WaitTCP(ctx, l.n, addr, p); err != nil {
		p.Stop(stopGrace)
		return nil, fmt.Errorf("%s: not ready (log: %s): %w", spec.Name, spec.Log, err)
	}
	return p, nil
}

func (l testLauncher) Run(ctx context.Context, spec proc.Program) (proc.Result, error) {
	return proc.Run(ctx, spec)
}

func (l testLauncher) WriteFile(_ context.Context, path string, data []byte, perm os.FileMode) error {
	return os.WriteFile(path, data, perm)
}

func (l testLauncher) MkdirAll(_ context.Context, path string, perm os.FileMode) error {
	return os.MkdirAll(path, perm)
}

func (l testLauncher) Account(_ context.Context, dir, user string) ([]ns.Mount, error) {
	return account.SSHD(dir, user)
}

// TestRelayCarriesSSH starts the relay (sshd, Xray, Caddy) in the relay
// namespace and has an SSH client in the client namespace log in to the
// relay's sshd through it, the way a tw server's reverse tunnel does:
// Xray as the tenant's client (VLESS over XHTTP stream-one, TLS 1.3 with
// the tenant's client certificate) → Caddy :443 (mutual TLS, the tenant's
// path and subject) → h2c → the relay's Xray → sshd on the relay's
// loopback, where the tenant's key is accepted and its forced command,
// /bin/false, ends the session. A client certificate of another subject
// gets no SSH. Needs root, Caddy and Xray (TWNSBENCH_CADDY /
// TWNSBENCH_XRAY or PATH; CI installs them), but not tw.
func TestRelayCarriesSSH(t *testing.T) {
	nstest.RequireRoot(t)
	caddy, xray := lookTool(t, "TWNSBENCH_CADDY", "caddy"), lookTool(t, "TWNSBENCH_XRAY", "xray")
	if caddy == "" || xray == "" {
		t.Skip("SKIPPED: needs Caddy and Xray (set TWNSBENCH_CADDY / TWNSBENCH_XRAY; see scripts/install-relay-tools.sh)")
	}
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if sshd, err = exec.LookPath("/usr/sbin/sshd"); err != nil {
			t.Skip("SKIPPED: needs OpenSSH's sshd")
		}
	}
	// Claimed as a run is, so that a concurrent `twnsbench clean` leaves
	// the namespaces alone; what the test leaves fails the package.
	prefix := nstest.Prefix(t)
	claim := filepath.Join("/tmp", prefix)
	topo, err := topology.Up(topology.DefaultSpec(prefix))
	if err != nil {
		os.RemoveAll(claim)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Down(); err != nil {
			t.Errorf("topology down: %v", err)
		}
		os.RemoveAll(claim)
		if left := residue.Find(prefix); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})
	// The run's directory, as a run's: world-traversable, so that sshd,
	// reading authorized_keys as the tenant account, can reach it.
	dir := claim
	const id = "vm-71e108c9"
	const domain = "relay.tw.test"

	// The relay's TLS (a CA and a leaf for its name), the tenant's CA and
	// client certificates (tw's server makes these in the product), and
	// the tenant's SSH key.
	rp, err := NewPKI(filepath.Join(dir, "relay-tls"), domain)
	if err != nil {
		t.Fatal(err)
	}
	tenantCA, err := pki.NewCA("tenant CA")
	if err != nil {
		t.Fatal(err)
	}
	tdir := filepath.Join(dir, "tenant")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := tenantCA.WriteCert(filepath.Join(tdir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	client := pki.Leaf{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, cn := range []string{id, "someone-else"} {
		client.CommonName = cn
		if err := tenantCA.Issue(client, filepath.Join(tdir, cn+".crt"), filepath.Join(tdir, cn+".key")); err != nil {
			t.Fatal(err)
		}
	}
	key := filepath.Join(tdir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	caPEM, _ := os.ReadFile(filepath.Join(tdir, "ca.crt"))
	const uuid = "71e108c9-efe5-40c2-be48-c488f44ff794"
	hostKey, err := NewHostKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Domain: domain, Dir: filepath.Join(dir, "relay"), SSHUser: "twrelay",
		Tenant:   Tenant{ServerID: id, UUIDs: []string{uuid}, RemotePort: 20000, SSHPubkey: string(pub), CACertPEM: string(caPEM)},
		LeafCert: rp.LeafCert, LeafKey: rp.LeafKey, HostKey: hostKey}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	relayNS := topo.Roles[topology.Relay].NS
	r, err := Start(ctx, cfg, Bins{Caddy: caddy, Xray: xray, SSHD: sshd}, testLauncher{relayNS, dir})
	if err != nil {
		t.Fatalf("relay up: %v", err)
	}
	defer func() {
		if err := r.Stop(); err != nil {
			t.Errorf("relay stop: %v", err)
		}
	}()
	if len(r.Procs()) != 3 {
		t.Fatalf("relay daemons: %+v", r.Procs())
	}

	// The tenant's side: Xray in the client namespace, 127.0.0.1:2222 to
	// the relay's sshd through Caddy and the relay's Xray.
	relayAddr := topo.Spec.Addr(topology.Relay).String()
	clientNS := topo.Roles[topology.Client].NS
	login := func(cn string, port int) (exit int, stderr string) {
		t.Helper()
		conf := filepath.Join(dir, cn+"-xray.json")
		if err := os.WriteFile(conf, tenantXray(port, relayAddr, domain, cfg.Path(), uuid,
			filepath.Join(tdir, cn+".crt"), filepath.Join(tdir, cn+".key")), 0o644); err != nil {
			t.Fatal(err)
		}
		l := testLauncher{clientNS, dir}
		spec := l.Program(cn+"-xray", xray, "run", "-config", conf)
		spec.Name = "client/" + cn + "-xray"
		spec.Env = []string{"SSL_CERT_FILE=" + rp.CACert} // trust the relay's CA, as tw's processes do
		x, err := l.Start(ctx, spec, fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer x.Stop(stopGrace)
		res, err := proc.Run(ctx, proc.Program{Name: "client/ssh", NetNS: clientNS.Path(), Argv: []string{"ssh",
			"-i", key, "-p", fmt.Sprint(port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
			"-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=20", "-o", "LogLevel=VERBOSE",
			"-T", cfg.SSHUser + "@127.0.0.1", "true"}})
		var ee *exec.ExitError
		if err != nil && !asExit(err, &ee) {
			t.Fatalf("ssh through the relay as %s: %v\n%s", cn, err, res.Stderr)
		}
		if ee != nil {
			exit = ee.ExitCode()
		}
		return exit, string(res.Stderr)
	}

	// Authenticated by the relay's sshd, then /bin/false: exit 1.
	exit, stderr := login(id, 2222)
	if exit != 1 || !strings.Contains(stderr, `Authenticated to 127.0.0.1`) {
		t.Errorf("the tenant through Caddy and Xray: exit %d, want 1 after logging in (/bin/false)\n%s\nrelay logs:\n%s", exit, stderr, logs(dir))
	}
	// Another subject: Caddy's route does not match, no SSH at all.
	exit, stderr = login("someone-else", 2223)
	if exit != 255 || strings.Contains(stderr, "Authenticated to") {
		t.Errorf("another certificate subject: exit %d, want 255 with no login\n%s", exit, stderr)
	}
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*ee = e
	}
	return ok
}

// tenantXray is the tenant side of tw's tunnel as tw's client and server
// embed it: a dokodemo-door on loopback to the relay's sshd, and a VLESS
// outbound over XHTTP (stream-one) and TLS with a client certificate.
func tenantXray(port int, relayAddr, domain, path, uuid, cert, key string) []byte {
	conf := map[string]any{
		"log": map[string]any{"loglevel": "warning"},
		"inbounds": []any{map[string]any{
			"listen": "127.0.0.1", "port": port, "protocol": "dokodemo-door",
			"settings": map[string]any{"address": "127.0.0.1", "port": SSHPort, "network": "tcp"},
		}},
		"outbounds": []any{map[string]any{
			"protocol": "vless",
			"settings": map[string]any{"vnext": []any{map[string]any{
				"address": relayAddr, "port": HTTPSPort,
				"users": []any{map[string]any{"id": uuid, "encryption": "none"}},
			}}},
			"streamSettings": map[string]any{
				"network": "xhttp", "security": "tls",
				"xhttpSettings": map[string]any{"path": path, "mode": "stream-one"},
				"tlsSettings": map[string]any{"serverName": domain, "alpn": []string{"h2"},
					"certificates": []any{map[string]any{"certificateFile": cert, "keyFile": key, "usage": "client-cert"}}},
			},
		}},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return b
}

// logs returns the relay's daemon logs, for a failure's message.
func logs(dir string) string {
	var b strings.Builder
	for _, name := range []string{"sshd", "xray", "caddy", "vm-71e108c9-xray"} {
		out, _ := os.ReadFile(filepath.Join(dir, name+".log"))
		fmt.Fprintf(&b, "--- %s\n%s\n", name, lastLines(string(out), 15))
	}
	return b.String()
}
