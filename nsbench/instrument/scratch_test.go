package instrument

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// scratchNetns makes a namespace named for the test and this process, lo up
// and a veth pair inside it addressed net.1 and net.2 (/24), removed when
// the test ends with every process still in it (netserver daemonises out
// of our hands). ip runs `ip` and fails the test on an error.
func scratchNetns(t *testing.T, name, net string) (ns string, ip func(args ...string)) {
	t.Helper()
	ns = fmt.Sprintf("twnsbtest-%s-%d", name, os.Getpid())
	ip = func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					if p, err := os.FindProcess(pid); err == nil {
						_ = p.Kill()
					}
				}
			}
		}
		_ = exec.Command("ip", "netns", "del", ns).Run()
	})
	ip("-n", ns, "link", "set", "lo", "up")
	a, b := name+"a", name+"b"
	ip("-n", ns, "link", "add", a, "type", "veth", "peer", "name", b)
	ip("-n", ns, "addr", "add", net+".1/24", "dev", a)
	ip("-n", ns, "addr", "add", net+".2/24", "dev", b)
	ip("-n", ns, "link", "set", a, "up")
	ip("-n", ns, "link", "set", b, "up")
	return ns, ip
}

// runIn is a Job's Run for programs inside the scratch namespace ns.
func runIn(ns string) func(ctx context.Context, name string, args ...string) (proc.Result, error) {
	return func(ctx context.Context, name string, args ...string) (proc.Result, error) {
		var out strings.Builder
		cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
		cmd.Stdout = &out
		start := time.Now()
		err := cmd.Run()
		return proc.Result{Stdout: []byte(out.String()), Wall: time.Since(start)}, err
	}
}
