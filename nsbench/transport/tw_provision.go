package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/relay"
)

// Provisioning with tw's own offline commands. tw has two enrollment
// flows:
//
//   - offline join (tw ≤ v2.0.x): `tw server join-relay <relay>` writes a
//     join request locally; the relay admin's answer (a join response) is
//     applied with `tw server join-relay --apply`; users are created with
//     `tw server user create`, exported with `tw config export-user` and
//     imported with `tw config import --activate`. twnsbench drives this
//     one and writes the join response itself, as the relay's admin.
//   - invite (newer releases): `tw relay invite`, `tw server user invite`,
//     `tw join <relay> <code>`, which needs a live relay run by tw's own
//     relay management. Not supported: that management writes /etc and
//     calls systemctl, which the harness must never run on the host.
//
// Every tw command runs in its role's namespace with its config, HOME and
// XDG directories inside the role's own directory (Role.Dir()/tw, on the
// role's host) and SSL_CERT_FILE pointing at the run's CA written there,
// so tw trusts the relay and nothing else. What one role's tw writes and
// another's reads (the exported user context) is read through the one
// role and written through the other.

// twJoinRequest is the part of tw's join request the relay needs.
type twJoinRequest struct {
	Version   int    `json:"version"`
	ServerID  string `json:"server_id"`
	UUID      string `json:"uuid"`
	RelayHost string `json:"relay_host"`
	CACertPEM string `json:"ca_cert_pem"`
	SSHPubkey string `json:"ssh_pubkey"`
}

// twJoinResponse is what tw's relay admin (`tw relay enroll-server`) hands
// back; unsigned, which tw accepts with a warning.
type twJoinResponse struct {
	Version    int    `json:"version"`
	ServerID   string `json:"server_id"`
	RelayHost  string `json:"relay_host"`
	Path       string `json:"path"`
	RemotePort int    `json:"remote_port"`
	SSHUser    string `json:"ssh_user"`
}

func joinResponse(req twJoinRequest) twJoinResponse {
	return twJoinResponse{
		Version:    1,
		ServerID:   req.ServerID,
		RelayHost:  twRelayHost,
		Path:       "/tw/" + req.ServerID,
		RemotePort: twRemotePort,
		SSHUser:    twRelayUser,
	}
}

// enrolment provisions the tw server and client once per run and returns
// the tenant the relay must serve, with the relay's host key. Every
// condition builds a fresh path (new processes, connections made under
// that condition), but the enrolment — the server's identity, the bench
// user, the client's imported context, in the roles' directories — is
// reused, as the reference's tw stays enrolled across its LAN and WAN
// cells. (tw refuses to create a user that exists, so provisioning twice
// cannot work anyway.)
func (t *TW) enrolment(ctx context.Context, u *twUp) (*twEnrolled, error) {
	if e := t.enrolled; e != nil && e.prefix == u.tb.Prefix {
		u.tb.Logf("%s: reusing this run's enrolment (server %s)", t.Label(), e.tenant.ServerID)
		return e, nil
	}
	u.tb.Logf("%s: provisioning with tw's offline commands (%s)", t.Label(), u.bins.twVersion)
	tenant, err := u.provision(ctx)
	if err != nil {
		return nil, err
	}
	key, err := relay.NewHostKey()
	if err != nil {
		return nil, err
	}
	t.enrolled = &twEnrolled{prefix: u.tb.Prefix, tenant: tenant, hostKey: key}
	return t.enrolled, nil
}

// provision runs the offline flow and returns the tenant the relay must
// serve: the server's identity plus the client's VLESS id.
func (u *twUp) provision(ctx context.Context) (relay.Tenant, error) {
	var t relay.Tenant
	for _, name := range []string{topology.Server, topology.Client} {
		r := u.tb.Roles[name]
		for _, d := range []string{"config", "home", "work"} {
			if err := role.MkdirAll(ctx, r, filepath.Join(u.dir(name), d), 0o700); err != nil {
				return t, fmt.Errorf("tw: %s: %w", name, err)
			}
		}
		if err := role.MkdirAll(ctx, r, u.certDir(name), 0o755); err != nil {
			return t, fmt.Errorf("tw: %s: %w", name, err)
		}
	}
	srv := topology.Server
	if err := u.tw(ctx, srv, "join-relay", "server", "join-relay", twRelayHost); err != nil {
		return t, err
	}
	req, err := readJoinRequest(ctx, u.tb.Roles[srv], u.workDir(srv))
	if err != nil {
		return t, err
	}
	respPath := filepath.Join(u.workDir(srv), "join-response.json")
	b, _ := json.MarshalIndent(joinResponse(req), "", "  ")
	if err := role.WriteFile(ctx, u.tb.Roles[srv], respPath, b, 0o644); err != nil {
		return t, fmt.Errorf("tw: write join response: %w", err)
	}
	if err := u.tw(ctx, srv, "join-apply", "server", "join-relay", "--apply", respPath); err != nil {
		return t, err
	}
	// `user create` then tries to add the client's VLESS id to the relay
	// (tw's addUUIDToRelay: SSH to the relay through the server's embedded
	// Xray, edit /usr/local/etc/xray/config.json with sudo, hot-add through
	// Xray's API or restart it with systemctl). No relay runs yet, so the
	// embedded Xray accepts and then resets the connection: tw logs "relay
	// update failed: … connection reset by peer" after ~15 s of retries and
	// goes on. The warning is harmless here, and the update must not
	// happen: the harness renders the relay's Xray config with that very id
	// (relay.Tenant.UUIDs, read back from the imported client config
	// below), and tw's relay management is never run (it writes /etc and
	// calls systemctl).
	create := []string{"server", "user", "create", BenchUser}
	for _, m := range append(slices.Clone(twMaps), u.extra...) {
		create = append(create, "-m", fmt.Sprintf("%d:%d", m[0], m[1]))
	}
	if err := u.tw(ctx, srv, "user-create", create...); err != nil {
		return t, err
	}
	if err := u.tw(ctx, srv, "export-user", "config", "export-user", BenchUser); err != nil {
		return t, err
	}
	// The exported context goes from the server's directory to the
	// client's, each on its role's host.
	name := BenchUser + "-tw-context.twctx"
	ctxFile, err := role.ReadFile(ctx, u.tb.Roles[srv], filepath.Join(u.workDir(srv), name))
	if err != nil {
		return t, fmt.Errorf("tw: exported user context: %w", err)
	}
	bundle := filepath.Join(u.workDir(topology.Client), name)
	if err := role.WriteFile(ctx, u.tb.Roles[topology.Client], bundle, ctxFile, 0o600); err != nil {
		return t, fmt.Errorf("tw: exported user context to the client: %w", err)
	}
	if err := u.tw(ctx, topology.Client, "import", "config", "import", bundle, "--activate"); err != nil {
		return t, err
	}
	cfg, err := role.ReadFile(ctx, u.tb.Roles[topology.Client], filepath.Join(u.dir(topology.Client), "config", "config.yaml"))
	if err != nil {
		return t, fmt.Errorf("tw: client config after import: %w", err)
	}
	clientUUID := yamlField(string(cfg), "xray", "uuid")
	if clientUUID == "" {
		return t, fmt.Errorf("tw: no xray uuid in the imported client config")
	}
	if port := yamlField(string(cfg), "client", "server_ssh_port"); port != strconv.Itoa(twRemotePort) {
		return t, fmt.Errorf("tw: imported client dials server port %q, want %d", port, twRemotePort)
	}
	return relay.Tenant{
		ServerID:   req.ServerID,
		UUIDs:      []string{req.UUID, clientUUID},
		RemotePort: twRemotePort,
		SSHPubkey:  req.SSHPubkey,
		CACertPEM:  req.CACertPEM,
	}, nil
}

// readJoinRequest reads the tw_join_<id>.json that join-relay wrote in
// role r.
func readJoinRequest(ctx context.Context, r *role.Role, dir string) (twJoinRequest, error) {
	var req twJoinRequest
	files, _ := twGlobOp.On(ctx, r, filepath.Join(dir, "tw_join_*.json"))
	if len(files) != 1 {
		return req, fmt.Errorf("tw server join-relay: want one tw_join_*.json in %s, found %d", dir, len(files))
	}
	b, err := role.ReadFile(ctx, r, files[0])
	if err != nil {
		return req, fmt.Errorf("tw: join request: %w", err)
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("tw: join request %s: %w", filepath.Base(files[0]), err)
	}
	if req.Version != 1 || req.ServerID == "" || req.UUID == "" || req.RelayHost != twRelayHost {
		return req, fmt.Errorf("tw: unexpected join request %s: version %d, server %q, relay %q",
			filepath.Base(files[0]), req.Version, req.ServerID, req.RelayHost)
	}
	return req, nil
}

// twGlobOp lists the role's files that match a pattern (filepath.Glob).
var twGlobOp = role.NewOp("tw.glob", func(ctx context.Context, pattern string) ([]string, error) {
	if err := role.CheckRead(ctx, pattern); err != nil {
		return nil, err
	}
	return filepath.Glob(pattern)
})

// twSpec is a tw command in role with the role's private directories.
func (u *twUp) twSpec(role, name string, args ...string) proc.Program {
	spec := u.tb.Program(role, name, append([]string{u.tb.ProgramAt(role, u.bins.tw)}, args...)...)
	spec.Env = u.roleEnv(role)
	spec.Dir = u.workDir(role)
	return spec
}

// dir is tw's directory in role: Role.Dir()/tw (a build's: tw@LABEL), on
// the role's host.
func (u *twUp) dir(role string) string { return filepath.Join(u.tb.Roles[role].Dir(), u.sub) }

// workDir is where role's tw commands run and write their files.
func (u *twUp) workDir(role string) string { return filepath.Join(u.dir(role), "work") }

// certDir is role's SSL_CERT_DIR: empty, so no host CA is trusted.
func (u *twUp) certDir(role string) string { return filepath.Join(u.dir(role), "certs") }

// twPKI is where the run's TLS files are, each in the directory of the
// role that reads it.
type twPKI struct {
	caCert            string // name in the client's and the server's tw directory
	leafCert, leafKey string // paths in the relay's
}

// newPKI makes a fresh CA of the run and the relay's leaf (relay.NewPKI,
// in a scratch directory here) and writes the CA to the client and the
// server, whose tw trusts it, and the leaf and its key to the relay.
func (u *twUp) newPKI(ctx context.Context) error {
	// The relay's tw directory holds its sshd's authorized_keys, which
	// sshd opens as the relay account: passable (not listable) by it, as
	// the role's own directory is; generate would make it root's alone.
	if err := role.MkdirAll(ctx, u.tb.Roles[topology.Relay], u.dir(topology.Relay), role.PrivateDirMode); err != nil {
		return fmt.Errorf("tw: relay directory: %w", err)
	}
	var made *relay.PKI
	err := generate(ctx, u.sub, func(scratch string) (err error) {
		made, err = relay.NewPKI(scratch, twRelayHost)
		return err
	}, placement{u.tb.Roles[topology.Client], []string{"ca.crt"}},
		placement{u.tb.Roles[topology.Server], []string{"ca.crt"}},
		placement{u.tb.Roles[topology.Relay], []string{"relay.crt", "relay.key"}})
	if err != nil {
		return fmt.Errorf("tw: run PKI: %w", err)
	}
	rel := u.dir(topology.Relay)
	u.pki = twPKI{caCert: filepath.Base(made.CACert),
		leafCert: filepath.Join(rel, filepath.Base(made.LeafCert)), leafKey: filepath.Join(rel, filepath.Base(made.LeafKey))}
	return nil
}

// tw runs one provisioning command to completion.
func (u *twUp) tw(ctx context.Context, role, step string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	spec := u.twSpec(role, "tw-"+step, args...)
	res, err := u.tb.Roles[role].RunProgram(ctx, spec)
	if err != nil {
		out := strings.TrimSpace(string(res.Stderr) + "\n" + string(res.Stdout))
		return fmt.Errorf("tw %s (%s): %v: %s (log: %s)", strings.Join(args, " "), role, err, twError(out), spec.Log)
	}
	return nil
}

// roleEnv keeps every file tw writes inside the role's directory and
// makes the run's CA the only one tw trusts.
func (u *twUp) roleEnv(role string) []string {
	home := filepath.Join(u.dir(role), "home")
	return []string{
		"TW_CONFIG_DIR=" + filepath.Join(u.dir(role), "config"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"SSL_CERT_FILE=" + filepath.Join(u.dir(role), u.pki.caCert),
		"SSL_CERT_DIR=" + u.certDir(role), // empty: no host CA is trusted
	}
}

// twVersion is `tw --version` (tw has no version subcommand).
func twVersion(bin string) (string, error) {
	out, err := twHelp(bin, "--version")
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(out)
	if !strings.HasPrefix(v, "tw version ") {
		return "", fmt.Errorf("%s --version: not a tw binary: %q", bin, twTail(v))
	}
	return v, nil
}

// twOfflineFlow checks that tw has the offline commands twnsbench drives,
// and names the flow the binary has instead when it does not.
func twOfflineFlow(bin, version string) error {
	help := map[string]string{}
	for _, cmd := range twFlowCommands {
		out, _ := twHelp(bin, append(strings.Fields(cmd), "--help")...)
		help[cmd] = out
	}
	return offlineFlow(version, help)
}

// twFlowCommands are the commands whose help output offlineFlow reads.
var twFlowCommands = []string{
	"server join-relay", "server user create", "config export-user", "config import",
	"relay invite", "join",
}

// offlineFlow decides from the help outputs of twFlowCommands. cobra
// prints the nearest parent's help for an unknown command, so a command
// exists when its own usage line does.
func offlineFlow(version string, help map[string]string) error {
	has := func(cmd string, flags ...string) bool {
		h := help[cmd]
		if !strings.Contains(h, "Usage:\n  tw "+cmd) {
			return false
		}
		for _, f := range flags {
			if !strings.Contains(h, f) {
				return false
			}
		}
		return true
	}
	var lacks []string
	for _, c := range []struct {
		cmd   string
		flags []string
	}{
		{"server join-relay", []string{"--apply"}},
		{"server user create", []string{"--map"}},
		{"config export-user", nil},
		{"config import", []string{"--activate"}},
	} {
		if !has(c.cmd, c.flags...) {
			lacks = append(lacks, "tw "+c.cmd+" "+strings.Join(c.flags, " "))
		}
	}
	if len(lacks) == 0 {
		return nil
	}
	if has("relay invite") || has("join") {
		return fmt.Errorf("%s has only the invite enrollment flow (tw relay invite / tw join), which twnsbench does not drive; it needs %s",
			version, strings.Join(lacks, ", "))
	}
	return fmt.Errorf("%s lacks the offline provisioning commands: %s", version, strings.Join(lacks, ", "))
}

// twHelp runs a help or version query. cobra answers these before it reads
// any configuration; the config directory is a throwaway one all the same.
func twHelp(bin string, args ...string) (string, error) {
	dir, err := os.MkdirTemp("", "twnsbench-twcheck-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = proc.Environ("TW_CONFIG_DIR="+filepath.Join(dir, "config"), "HOME="+dir)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, twTail(string(out)))
	}
	return string(out), nil
}

// yamlField reads key from a top-level section of a flat YAML document,
// as tw writes its config.yaml ("xray:\n    uuid: …").
func yamlField(doc, section, key string) string {
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			in = strings.TrimSpace(line) == section+":"
			continue
		}
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); in && ok && k == key {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// twError picks the line of a failed tw command's output that states the
// error: cobra prints "Error: …" and then the usage text, whose last line
// says nothing about what went wrong. Without such a line, the last line.
func twError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "Error: ") {
			return l
		}
	}
	return twTail(out)
}

func twTail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
