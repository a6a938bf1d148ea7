package transport_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// The run's ssh clients trust only the host key the run made: the
// readiness exchange passes against the fixture sshd, and fails once that
// sshd presents another key (a man in the middle, a stranger's sshd on
// the address).
func TestSSHClientsPinTheRunsHostKey(t *testing.T) {
	e := env(t)
	cli, srv := e.Roles[topology.Client], e.Roles[topology.Server]
	// sshd reads authorized_keys as the bench user: the test's temporary
	// directories (0700) must let it through, as a run's own do.
	for d := filepath.Join(srv.Dir(), "ssh"); d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	job := &instrument.Job{
		Target: transport.DirectTarget(srv.Addr().String()),
		Run: func(ctx context.Context, name string, args ...string) (proc.Result, error) {
			return cli.Run(ctx, name, args...)
		},
		SSH: instrument.SSHClient{User: transport.BenchUser, KeyPath: e.Fixtures.KeyPath, KnownHosts: e.Fixtures.KnownHosts},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := instrument.Exchange(ctx, job); err != nil {
		t.Fatalf("exchange with the run's own sshd: %v", err)
	}
	// Another host key for the same sshd, restarted.
	other := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	key, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := role.WriteFile(ctx, srv, filepath.Join(srv.Dir(), "ssh", "ssh_host_ed25519_key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.Fixtures.Restart(ctx, e, transport.ServiceSSH); err != nil {
		t.Fatal(err)
	}
	err = instrument.Exchange(ctx, job)
	if err == nil || !strings.Contains(err.Error(), "Host key verification failed") {
		t.Errorf("exchange with an sshd presenting another host key: %v, want host key verification failed", err)
	}
}

// Every ssh and scp command line of the run reads no ssh_config, no
// agent, no identity and no known_hosts but the run's; and no code of the
// module turns host-key checks off.
func TestSSHClientsReadNothingOfTheOperators(t *testing.T) {
	c := instrument.SSHClient{User: "bench", KeyPath: "/run/k", KnownHosts: "/run/known_hosts"}
	for _, form := range []string{instrument.FormSCP, instrument.FormSCPLegacy, instrument.FormSSHCat} {
		c.Form = form
		argv := instrument.CopyCommand(c, transport.DirectTarget("10.77.0.4"), "/f")
		got := strings.Join(argv, " ")
		for _, want := range []string{"-F /dev/null", "-o StrictHostKeyChecking=yes", "-o UserKnownHostsFile=/run/known_hosts",
			"-o GlobalKnownHostsFile=/dev/null", "-o IdentitiesOnly=yes", "-o IdentityAgent=none", "-i /run/k"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: %q lacks %q", form, got, want)
			}
		}
	}
	if s := instrument.OptionsString(); !strings.Contains(s, "UserKnownHostsFile=KNOWN_HOSTS") || !strings.HasSuffix(s, "-i KEY") {
		t.Errorf("options as recorded: %q", s)
	}
	var offenders []string
	for _, root := range []string{"..", "../../cmd"} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, off := range []string{"StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"} {
				if strings.Contains(string(b), off) && !slices.Contains(offenders, path) {
					offenders = append(offenders, path)
				}
			}
			return nil
		})
	}
	if len(offenders) > 0 {
		t.Errorf("host-key checks turned off in %v", offenders)
	}
}
