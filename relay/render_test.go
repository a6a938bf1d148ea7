package relay

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixedConfig is a relay for a fixed identity, as a join request and the
// harness's response would describe it.
func fixedConfig(dir string) Config {
	return Config{
		Domain:  "relay.tw.test",
		Dir:     dir,
		SSHUser: "twrelay",
		Tenant: Tenant{
			ServerID: "vm-71e108c9",
			UUIDs: []string{
				"71e108c9-efe5-40c2-be48-c488f44ff794", // the server's
				"f030b7e6-8ffd-4f33-a79a-df82374717ff", // the bench user's
			},
			RemotePort: 20000,
			SSHPubkey:  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIL9B3BokKrM5NKPH71IbvpAfI60S21HEAcitfvCw0lXx",
			CACertPEM:  "-----BEGIN CERTIFICATE-----\n(not used by rendering)\n-----END CERTIFICATE-----\n",
		},
		LeafCert: filepath.Join(dir, "tls", "relay.crt"),
		LeafKey:  filepath.Join(dir, "tls", "relay.key"),
	}
}

func TestRenderGolden(t *testing.T) {
	c := fixedConfig("/tmp/twnsb-000000/tw/relay")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{
		"Caddyfile":       c.Caddyfile(),
		"xray.json":       c.XrayConfig(),
		"sshd_config":     c.SSHDConfig(),
		"authorized_keys": c.AuthorizedKeys(),
	} {
		golden(t, name, got)
	}
	if !json.Valid([]byte(c.XrayConfig())) {
		t.Error("xray.json is not valid JSON")
	}
}

// TestRenderOneClient covers the template's list with a single id.
func TestRenderOneClient(t *testing.T) {
	c := fixedConfig("/tmp/x")
	c.Tenant.UUIDs = c.Tenant.UUIDs[:1]
	var x struct {
		Inbounds []struct {
			Settings struct {
				Clients []struct{ ID, Email string }
			}
		}
	}
	if err := json.Unmarshal([]byte(c.XrayConfig()), &x); err != nil {
		t.Fatal(err)
	}
	if cl := x.Inbounds[1].Settings.Clients; len(cl) != 1 || cl[0].Email != "vm-71e108c9" {
		t.Errorf("clients: %+v", cl)
	}
}

func TestValidateRefuses(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"server id with a brace": func(c *Config) { c.Tenant.ServerID = "vm}" },
		"uppercase server id":    func(c *Config) { c.Tenant.ServerID = "VM-1" },
		"bad uuid":               func(c *Config) { c.Tenant.UUIDs = []string{"x\"}"} },
		"no uuid":                func(c *Config) { c.Tenant.UUIDs = nil },
		"relative dir":           func(c *Config) { c.Dir = "relay" },
		"dir with a space":       func(c *Config) { c.Dir = "/tmp/a b" },
		"port too high":          func(c *Config) { c.Tenant.RemotePort = 60000 },
		"two-line key":           func(c *Config) { c.Tenant.SSHPubkey = "ssh-ed25519 A\nssh-rsa B" },
		"bad user":               func(c *Config) { c.SSHUser = "root;" },
	} {
		c := fixedConfig("/tmp/x")
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestForcedCommand(t *testing.T) {
	line := fixedConfig("/tmp/x").AuthorizedKeys()
	for _, want := range []string{`command="/bin/false"`, `restrict`, `permitlisten="127.0.0.1:20000"`, `permitopen="127.0.0.1:1"`} {
		if !strings.Contains(line, want) {
			t.Errorf("authorized_keys lacks %s: %s", want, line)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("want exactly one newline-terminated line: %q", line)
	}
}

func TestVersionChecks(t *testing.T) {
	for _, tc := range []struct {
		out, want string
		ok        bool
	}{
		{"v2.11.9 h1:abc=\n", "v2.11.9", true},
		{"v2.8.0 h1:x=", "v2.8.0", true},
		{"2.6.2\n", "v2.6.2", false}, // Debian's caddy prints no "v"
		{"unknown\n", "", false},
		{"v2.6.2 h1:x=", "v2.6.2", false},
		{"v1.9.0", "v1.9.0", false},
	} {
		got, err := checkCaddyVersion(tc.out)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("caddy %q: %q, %v", tc.out, got, err)
		}
	}
	info := "go\tgo1.26.8\npath\tgithub.com/caddyserver/caddy/v2/cmd/caddy\nmod\tgithub.com/caddyserver/caddy/v2\tv2.11.9\th1:bh=\ndep\tcel.dev/expr\tv0.25.3\n"
	if v := caddyModuleVersion(info); v != "v2.11.9" {
		t.Errorf("caddy build-info: %q", v)
	}
	if v, err := checkXrayVersion("Xray 26.3.27 (Xray, Penetrates Everything.) Custom (go1.26.8 linux/amd64)\nA unified platform"); v != "Xray 26.3.27" || err != nil {
		t.Errorf("xray: %q %v", v, err)
	}
	if _, err := checkXrayVersion("V2Ray 5.1.0"); err == nil {
		t.Error("xray: accepted another program")
	}
}

// TestRealBinariesAcceptRendered writes a relay's files with a real PKI and
// has the real Caddy and Xray check them (sshd too when present). Neither
// check starts a listener.
func TestRealBinariesAcceptRendered(t *testing.T) {
	caddy, xray := lookTool(t, "TWNSBENCH_CADDY", "caddy"), lookTool(t, "TWNSBENCH_XRAY", "xray")
	if caddy == "" && xray == "" {
		t.Skip("skipped: neither caddy nor xray found (set TWNSBENCH_CADDY / TWNSBENCH_XRAY; see scripts/install-relay-tools.sh)")
	}
	dir := t.TempDir()
	c := fixedConfig(filepath.Join(dir, "relay"))
	pki, err := NewPKI(filepath.Join(c.Dir, "tls"), c.Domain)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(pki.CACert)
	c.Tenant.CACertPEM = string(caPEM) // any CA will do as the trust pool
	if err := writeConfigs(context.Background(), c, testLauncher{}); err != nil {
		t.Fatal(err)
	}
	if caddy != "" {
		cmd := exec.Command(caddy, "validate", "--adapter", "caddyfile", "--config", c.CaddyfilePath())
		cmd.Env = append(os.Environ(), caddyEnv(c)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("caddy validate: %v\n%s", err, out)
		}
	}
	if xray != "" {
		if out, err := exec.Command(xray, "run", "-test", "-config", c.XrayConfigPath()).CombinedOutput(); err != nil {
			t.Errorf("xray run -test: %v\n%s", err, out)
		}
	}
	// sshd -t needs the account that exists only in the namespace
	// launcher's private mounts; the integration run (tw_test.go) covers it.
}

// lookTool finds a binary from env or PATH, logging visibly when absent.
func lookTool(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Logf("SKIPPED part: %s not found (set %s or put it on PATH; see scripts/install-relay-tools.sh)", name, env)
	return ""
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./relay -update)", err)
	}
	if string(want) != got {
		os.WriteFile(path+".got", []byte(got), 0o644)
		t.Errorf("%s differs from %s (got written to %s.got; -update accepts it)", name, path, path)
	}
}
