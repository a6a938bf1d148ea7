package nsbench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// agentAnswer is what the agent answers a request on the wire.
type agentAnswer struct {
	ID     uint64          `json:"id"`
	Err    string          `json:"err"`
	Result json.RawMessage `json:"result"`
}

// rawAgent is `twnsbench agent SCOPE` served in this process, spoken to
// in the wire's own JSON lines: what a buggy orchestrator could send.
type rawAgent struct {
	t       *testing.T
	enc     *json.Encoder
	answers *bufio.Scanner
	next    uint64
}

func (a *rawAgent) ask(req map[string]any) agentAnswer {
	a.t.Helper()
	a.next++
	req["id"] = a.next
	if err := a.enc.Encode(req); err != nil {
		a.t.Fatal(err)
	}
	for a.answers.Scan() {
		var ans agentAnswer
		if err := json.Unmarshal(a.answers.Bytes(), &ans); err != nil {
			a.t.Fatal(err)
		}
		if ans.ID == a.next {
			return ans
		}
	}
	a.t.Fatalf("the agent ended before answering %v: %v", req, a.answers.Err())
	return agentAnswer{}
}

// An agent serves its run's role and nothing else: whatever its session
// asks, it enters only the role's namespace, runs programs only there and
// in the run's cgroup, reads and writes files only in the run's
// directories (and the namespace's own /proc/sys/net), and builds only its
// own role.
func TestAgentReachesOnlyItsRun(t *testing.T) {
	nstest.RequireRoot(t)
	scope := role.Scope(nstest.Prefix(t), topology.Server)
	n, err := ns.Create(scope) // the role's namespace, as build-role makes it
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	t.Cleanup(func() { _ = ns.Delete(scope) })
	toAgent, fromTest := io.Pipe()
	toTest, fromAgent := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeAgent(context.Background(), scope, time.Minute, toAgent, fromAgent)
		fromAgent.Close()
	}()
	t.Cleanup(func() {
		fromTest.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("agent still serving 30 s after its session ended")
		}
	})
	a := &rawAgent{t: t, enc: json.NewEncoder(fromTest), answers: bufio.NewScanner(toTest)}
	outside := t.TempDir()
	marker := filepath.Join(outside, "ran")
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(privateDir(scope), "config")
	cgroupRoot, err := proc.Cgroup2Root()
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		what string
		req  map[string]any
		want string // in the refusal
	}{
		{"a call in the host's namespace by a path", map[string]any{"kind": "call", "netns": "../../proc/1/ns/net",
			"op": "role.udp-stats", "args": map[string]any{}}, "not this run's"},
		{"a call in another namespace", map[string]any{"kind": "call", "netns": "twnsb-000000-client",
			"op": "role.udp-stats", "args": map[string]any{}}, "not this run's"},
		{"a program in the host's namespace", map[string]any{"kind": "run", "program": proc.Program{Name: "x",
			Argv: []string{"/bin/sh", "-c", ": >" + marker}}}, "not this run's"},
		{"a daemon in the host's namespace", map[string]any{"kind": "start", "program": proc.Program{Name: "x",
			Argv: []string{"/bin/sh", "-c", ": >" + marker}}}, "not this run's"},
		{"a program outside the run's cgroup", map[string]any{"kind": "run", "program": proc.Program{Name: "x",
			NetNS: filepath.Join(ns.RunDir, scope), Cgroup: &proc.Cgroup{Path: cgroupRoot},
			Argv: []string{"/bin/sh", "-c", ": >" + marker}}}, "cgroup"},
		{"a program logging outside", map[string]any{"kind": "run", "program": proc.Program{Name: "x",
			NetNS: filepath.Join(ns.RunDir, scope), Cgroup: &proc.Cgroup{Path: filepath.Join(cgroupRoot, scope)},
			Log: filepath.Join(outside, "log"), Argv: []string{"/bin/sh", "-c", ": >" + marker}}}, "outside"},
		{"reading a host file", map[string]any{"kind": "call", "netns": scope, "op": "role.read-file",
			"args": "/etc/shadow"}, "outside the run's directories"},
		{"reading by a climbing path", map[string]any{"kind": "call", "netns": scope, "op": "role.read-file",
			"args": privateDir(scope) + "/../../etc/shadow"}, "outside the run's directories"},
		{"writing a host file", map[string]any{"kind": "call", "netns": scope, "op": "role.write-file",
			"args": map[string]any{"Path": marker, "Data": []byte("x"), "Perm": 0o644}}, "outside the run's directories"},
		{"making a host directory", map[string]any{"kind": "call", "netns": scope, "op": "role.mkdir",
			"args": map[string]any{"Path": filepath.Join(outside, "d"), "Perm": 0o755}}, "outside the run's directories"},
		{"listing the host's cgroups", map[string]any{"kind": "call", "netns": scope, "op": "role.cgroup-pids",
			"args": cgroupRoot}, "outside the run's"},
		{"unmounting outside the run", map[string]any{"kind": "call", "netns": scope, "op": "nsbench.unmount-payload",
			"args": map[string]any{"Dir": outside}}, "outside the run's directories"},
		{"an IPsec directory removing a host path", map[string]any{"kind": "call", "netns": scope, "op": "ipsec.write-conf-dir",
			"args": map[string]any{"Remove": []string{victim}}}, "outside the run's directories"},
		{"an sshd account made elsewhere", map[string]any{"kind": "call", "netns": scope, "op": "transport.sshd-account",
			"args": map[string]any{"Dir": filepath.Join(outside, "acct"), "User": "twbench"}}, "outside the run's directories"},
		{"globbing host files", map[string]any{"kind": "call", "netns": scope, "op": "tw.glob", "args": "/etc/*"},
			"outside the run's directories"},
		{"a WireGuard socket by a climbing name", map[string]any{"kind": "call", "netns": scope, "op": "wg.remove",
			"args": map[string]any{"Name": "../../.." + victim, "Socket": true}}, "not an interface name"},
		{"building another run's role", map[string]any{"kind": "call", "op": "host.build-role",
			"args": role.RoleOnHost{Link: topology.LinkSpec{Spec: topology.Spec{Prefix: "twnsb-000000"}, Role: topology.Client},
				Dirs: role.Dirs{Log: filepath.Join(outside, "logs"), Private: outside}}}, "serves " + scope + " only"},
		{"building its role with files elsewhere", map[string]any{"kind": "call", "op": "host.build-role",
			"args": role.RoleOnHost{Link: topology.LinkSpec{Spec: topology.Spec{Prefix: strings.TrimSuffix(scope, "-"+topology.Server)},
				Role: topology.Server}, Dirs: role.Dirs{Log: filepath.Join(outside, "logs"), Private: outside}}}, "outside the run's directories"},
	} {
		if ans := a.ask(tc.req); !strings.Contains(ans.Err, tc.want) {
			t.Errorf("%s: answered %q (a result of %d bytes), want a refusal with %q", tc.what, ans.Err, len(ans.Result), tc.want)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the agent removed a file outside its run: %v", err)
	}
	for _, p := range []string{marker, filepath.Join(outside, "d"), filepath.Join(outside, "logs"), filepath.Join(outside, "log"), filepath.Join(outside, "acct")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the agent made %s, outside its run", p)
		}
	}

	// What the run's own work needs still works.
	if ans := a.ask(map[string]any{"kind": "call", "netns": scope, "op": "role.write-file",
		"args": map[string]any{"Path": inside, "Data": []byte("ok"), "Perm": 0o644}}); ans.Err != "" {
		t.Errorf("writing in the run's directory: %s", ans.Err)
	}
	if ans := a.ask(map[string]any{"kind": "call", "netns": scope, "op": "role.read-file", "args": inside}); ans.Err != "" || string(ans.Result) != `{"Data":"b2s=","Missing":false}` {
		t.Errorf("reading in the run's directory: %s %s", ans.Result, ans.Err)
	}
	if ans := a.ask(map[string]any{"kind": "call", "netns": scope, "op": "role.read-file", "args": "/proc/sys/net/core/somaxconn"}); ans.Err != "" {
		t.Errorf("reading the namespace's own settings: %s", ans.Err)
	}
}
