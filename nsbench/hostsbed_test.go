package nsbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// compromisedHost is the far end of a role's wire on a host whose root
// answers what it likes: it builds a role without building anything and
// serves logs from files, a map of the names it lists to what it sends
// for each (whatever size it claims).
func compromisedHost(t *testing.T, files map[string][]byte, claimed map[string]int64) *role.Role {
	toHost, fromOrch := io.Pipe()
	toOrch, fromHost := io.Pipe()
	t.Cleanup(func() { fromOrch.Close(); fromHost.Close() })
	go func() {
		sc := bufio.NewScanner(toHost)
		sc.Buffer(nil, 1<<20)
		enc := json.NewEncoder(fromHost)
		for sc.Scan() {
			var req struct {
				ID   uint64
				Op   string
				Args json.RawMessage
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			var result any
			switch req.Op {
			case "host.build-role":
				result = role.HostedRole{Name: topology.Server, NetNS: "twnsb-test-server", LogDir: "/nowhere/logs"}
			case "nsbench.log-files":
				// In name order, as the host's own listing (os.ReadDir).
				var list []logFile
				for _, name := range slices.Sorted(maps.Keys(files)) {
					list = append(list, logFile{Name: name, Size: claimed[name]})
				}
				result = list
			default: // whichever op reads a log: the name it asks for
				var name string
				var file struct{ Name string }
				if json.Unmarshal(req.Args, &name) != nil {
					_ = json.Unmarshal(req.Args, &file)
					name = file.Name
				}
				result = files[strings.TrimPrefix(name, "/nowhere/logs/")]
			}
			raw, _ := json.Marshal(result)
			if enc.Encode(map[string]any{"id": req.ID, "result": json.RawMessage(raw)}) != nil {
				return
			}
		}
	}()
	c := role.NewWire("compromised host", toOrch, fromOrch)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, _, err := role.BuildRole(ctx, c, role.RoleOnHost{Link: topology.LinkSpec{Role: topology.Server}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A host's logs come back under their base names into the run's log
// directory, or not at all: a name that leaves the directory is refused
// and named, and a log larger than the bound is left on the host, named,
// whatever size the host claimed for it.
func TestFetchLogsKeepsTheHostInsideTheLogDirectory(t *testing.T) {
	top := t.TempDir()
	local := filepath.Join(top, "run", "logs")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	huge := bytes.Repeat([]byte("x"), maxFetchedLog+1)
	r := compromisedHost(t, map[string][]byte{
		"server-sshd.log":      []byte("sshd ok\n"),
		"../escaped":           []byte("written outside\n"),
		"../../etc-cron":       []byte("* * * * * root sh\n"),
		"sub/dir.log":          []byte("nested\n"),
		"..":                   []byte("dotdot\n"),
		"server-iperf3.log":    huge,
		"server-netserver.log": []byte("ok too\n"),
	}, map[string]int64{"server-iperf3.log": 10})
	var mu sync.Mutex
	var said []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, fmt.Sprintf(format, args...))
	}
	err := fetchLogs(context.Background(), r, "/nowhere/logs", local, logf)
	for _, p := range []string{filepath.Join(top, "run", "escaped"), filepath.Join(top, "etc-cron"), filepath.Join(local, "sub")} {
		if _, serr := os.Lstat(p); serr == nil {
			t.Errorf("the host wrote %s, outside the run's log directory or nested in it", p)
		}
	}
	got, _ := os.ReadDir(local)
	var names []string
	for _, e := range got {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "server-netserver.log,server-sshd.log" {
		t.Errorf("log directory holds %v, want the two small logs with base names", names)
	}
	if b, _ := os.ReadFile(filepath.Join(local, "server-sshd.log")); string(b) != "sshd ok\n" {
		t.Errorf("server-sshd.log = %q", b)
	}
	if err == nil {
		t.Fatal("fetchLogs accepted names that are not base names")
	}
	for _, bad := range []string{`"../escaped"`, `"../../etc-cron"`, `"sub/dir.log"`, `".."`} {
		if !strings.Contains(err.Error(), bad) {
			t.Errorf("the error does not name the refused %s: %v", bad, err)
		}
	}
	if !strings.Contains(strings.Join(said, "\n"), "server-iperf3.log") {
		t.Errorf("the oversized log is not named: %q", said)
	}
}

// A host can write only new logs of its own role's: another role's name
// is refused, a file already in the directory (another host's log, a
// link planted there) is never overwritten or followed, and the number of
// logs is bounded.
func TestFetchLogsWritesOnlyNewLogsOfItsRole(t *testing.T) {
	top := t.TempDir()
	local := filepath.Join(top, "logs")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(top, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o600)
	os.WriteFile(filepath.Join(local, "client-iperf3.log"), []byte("the client's\n"), 0o644)
	os.WriteFile(filepath.Join(local, "server-sshd.log"), []byte("fetched before\n"), 0o644)
	os.Symlink(victim, filepath.Join(local, "server-planted.log"))
	files := map[string][]byte{
		"client-iperf3.log":  []byte("forged\n"),
		"server-sshd.log":    []byte("forged\n"),
		"server-planted.log": []byte("forged\n"),
	}
	for i := range maxFetchedLogs + 5 {
		// After the three above in name order: those are met before the
		// bound on how many logs are fetched.
		files[fmt.Sprintf("server-z%04d.log", i)] = []byte("n\n")
	}
	var said []string
	err := fetchLogs(context.Background(), compromisedHost(t, files, nil), "/nowhere/logs", local,
		func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) })
	if err == nil || !strings.Contains(err.Error(), `"client-iperf3.log"`) || !strings.Contains(err.Error(), "file exists") {
		t.Errorf("error %v, want the client's log refused and existing files named", err)
	}
	for p, want := range map[string]string{
		filepath.Join(local, "client-iperf3.log"): "the client's\n",
		filepath.Join(local, "server-sshd.log"):   "fetched before\n",
		victim:                                    "keep\n",
	} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s holds %q, want %q", p, b, want)
		}
	}
	n, _ := filepath.Glob(filepath.Join(local, "server-z*.log"))
	if len(n) > maxFetchedLogs || len(n) < maxFetchedLogs-2 {
		t.Errorf("fetched %d numbered logs, want at most %d (and no fewer than the bound less the refused)", len(n), maxFetchedLogs)
	}
	if !strings.Contains(strings.Join(said, "\n"), fmt.Sprintf("more than %d logs", maxFetchedLogs)) {
		t.Errorf("the logs left behind are not said: %q", said)
	}
}
