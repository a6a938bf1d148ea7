package fanout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// privateBase holds each run's private directory, where clean looks for
// it by the run's name (nsbench.PrivateBase).
const privateBase = "/tmp"

// ownerFile holds the harness's PID in the private directory, so that
// clean tells a live run from a dead one's leftovers (nsbench's).
const ownerFile = "harness.pid"

// teardownTimeout bounds a bed's whole teardown, which runs under a fresh
// context so that a cancelled sweep still cleans up.
const teardownTimeout = 60 * time.Second

// bed is an N-client testbed. Each creation pushes its undo as soon as it
// succeeded; down runs them newest first.
type bed struct {
	prefix string
	n      int
	view   *transport.Testbed // the roles, their processes in the base leaf
	tree   *role.Tree
	undo   []undoStep
}

type undoStep struct {
	name string
	fn   func(context.Context) error
}

func (b *bed) push(name string, fn func(context.Context) error) {
	b.undo = append(b.undo, undoStep{name, fn})
}

// upBed builds an N-client testbed up to its iperf3 servers (upBed's
// caller adds the transport's paths). On failure it tears down what it
// built.
func upBed(ctx context.Context, n int, withRelay bool, outDir string, logf func(string, ...any)) (b *bed, err error) {
	prefix, err := topology.NewPrefix()
	if err != nil {
		return nil, err
	}
	b = &bed{prefix: prefix, n: n}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.down())
			b = nil
		}
	}()
	dir := filepath.Join(privateBase, prefix)
	if err := os.Mkdir(dir, role.PrivateDirMode); err != nil {
		return b, fmt.Errorf("private directory: %w", err)
	}
	b.push("private directory", func(context.Context) error { return os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return b, fmt.Errorf("private directory: %w", err)
	}
	logDir := filepath.Join(outDir, "logs", prefix)
	if err := safedir.MkdirAllIn("output directory", outDir, filepath.Join("logs", prefix), 0o755); err != nil {
		return b, fmt.Errorf("log directory: %w", err)
	}
	topo, err := topology.Up(Spec(prefix, n, withRelay))
	if err != nil {
		return b, fmt.Errorf("topology: %w", err)
	}
	b.push("topology", func(context.Context) error { return topo.Down() })
	root, err := proc.Cgroup2Root()
	if err != nil {
		return b, err
	}
	b.tree = role.NewTree(root, prefix)
	roles, err := b.tree.Roles(topo, role.Dirs{Log: logDir, Private: dir})
	b.push("cgroups", b.tree.Remove)
	if err != nil {
		return b, err
	}
	b.view = &transport.Testbed{Prefix: prefix, Roles: roles, Dir: dir, LogDir: logDir, Logf: logf}
	fx, err := transport.StartFixtures(ctx, b.view, nil)
	if err != nil {
		return b, err
	}
	b.view.Fixtures = fx
	b.push("server fixtures", func(context.Context) error { return fx.Stop() })
	return b, b.startIPerf3(ctx)
}

// startIPerf3 starts one iperf3 server per client in the server role's
// own leaf, apart from the transport's, and waits until all listen.
func (b *bed) startIPerf3(ctx context.Context) error {
	srv, err := b.view.Roles[topology.Server].Leaf(ctx, "iperf3-fan")
	if err != nil {
		return err
	}
	var ps []*proc.Process
	b.push("iperf3 servers", func(context.Context) error {
		var errs []error
		for _, p := range ps {
			errs = append(errs, p.Stop(3*time.Second))
		}
		return errors.Join(errs...)
	})
	for i := range b.n {
		p, err := srv.Start(ctx, srv.Program("iperf3-"+strconv.Itoa(i+1), "iperf3", "-s", "-p", strconv.Itoa(transport.FanPort(i))))
		if err != nil {
			return fmt.Errorf("iperf3 server %d: %w", i+1, err)
		}
		ps = append(ps, p)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return proc.WaitUntil(wctx, fmt.Sprintf("%d iperf3 servers listening", b.n), func() error {
		st, err := role.TCP(wctx, srv)
		if err != nil {
			return err
		}
		for i, p := range ps {
			if !metrics.Listening(st.Sockets, transport.FanPort(i)) {
				select {
				case <-p.Done():
					return fmt.Errorf("iperf3 server %d (pid %d) exited: %v", i+1, p.PID(), p.Err())
				default:
				}
				return fmt.Errorf("iperf3 server %d not listening yet", i+1)
			}
		}
		return nil
	}, nil)
}

// down runs the undo steps newest first under a fresh context with a
// deadline, and returns every error.
func (b *bed) down() error {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	var errs []error
	for i := len(b.undo) - 1; i >= 0; i-- {
		if err := b.undo[i].fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("teardown %s: %w", b.undo[i].name, err))
		}
	}
	b.undo = nil
	return errors.Join(errs...)
}

// residue names what of the bed is still there after down, of every
// kind a run creates (package residue): namespaces, links, cgroups,
// mounts, processes, files, WireGuard sockets. It must be empty.
func (b *bed) residue() []string {
	var left []string
	for _, o := range residue.Find(b.prefix) {
		left = append(left, o.String())
	}
	return left
}
