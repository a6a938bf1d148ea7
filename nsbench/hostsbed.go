package nsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// hostedRole is a role on another host and what serves it.
type hostedRole struct {
	host  hosts.Host
	built role.HostedRole
	r     *role.Role
	conn  *role.Wire // to its agent
	iface string     // the host's interface it stands on
}

// upOnHosts has each agent of rs build its role's namespace on its
// host's interface, all at once; what ends the agents (which then remove
// what they built) is the caller's to put on the teardown first.
func (b *bed) upOnHosts(ctx context.Context, spec topology.Spec, rs []roleSite) (map[string]*role.Role, []hostedRole, error) {
	peers := map[string]netip.Addr{}
	for _, r := range rs {
		peers[r.host.Role] = r.host.RoleAddr.Addr()
	}
	for name, r := range spec.HostNames {
		if _, ok := peers[r]; !ok {
			delete(spec.HostNames, name) // its role is in no host of this run
		}
	}
	built := make([]hostedRole, len(rs))
	errs := make([]error, len(rs))
	var mu sync.Mutex // the teardown stack
	push := func(name string, fn func(context.Context) error) {
		mu.Lock()
		defer mu.Unlock()
		b.onTeardown(name, fn)
	}
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			var err error
			built[i], err = b.upOnHost(ctx, r, spec, peers, push)
			if err != nil {
				errs[i] = fmt.Errorf("%s %s: %w", r.host.Role, r.host.Dest(), err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	roles := map[string]*role.Role{}
	for _, h := range built {
		roles[h.host.Role] = h.r
	}
	b.hosted = built
	return roles, built, nil
}

func (b *bed) upOnHost(ctx context.Context, rs roleSite, spec topology.Spec, peers map[string]netip.Addr,
	push func(string, func(context.Context) error)) (hostedRole, error) {
	t0 := time.Now()
	h, ifc := rs.host, rs.ifc
	private := privateDir(role.Scope(b.prefix, h.Role))
	r, hr, err := role.BuildRole(ctx, rs.wire, role.RoleOnHost{
		Link: topology.LinkSpec{Spec: spec, Role: h.Role, Parent: ifc.Name, Addr: h.RoleAddr, Peers: peers,
			HostsFile: filepath.Join(private, "hosts"), Edge: b.cfg.WAN},
		Dirs: role.Dirs{Log: filepath.Join(private, "logs"), Private: private},
	})
	if err != nil {
		return hostedRole{}, err
	}
	// Before the agent ends (the stack unwinds backwards), once every
	// daemon of the role has stopped: its logs, which the agent then
	// removes with the role, come to this run's log directory.
	push(h.Role+" logs", func(ctx context.Context) error { return fetchLogs(ctx, r, hr.LogDir, b.logDir(), b.logf) })
	b.logf("%s on %s: %s %s on %s, up in %.1f s", h.Role, h.Dest(), hr.NetNS, h.RoleAddr, ifc.Name, time.Since(t0).Seconds())
	return hostedRole{host: h, built: hr, r: r, conn: rs.wire, iface: ifc.Name}, nil
}

// describeHosts is the network of a run across hosts for the
// Environment; edge says the roles stand behind an edge (a WAN run).
func describeHosts(built []hostedRole, edge bool) string {
	var parts []string
	for _, b := range built {
		parts = append(parts, fmt.Sprintf("%s %s on %s", b.host.Role, b.host.RoleAddr.Addr(), b.host.Dest()))
	}
	network := "one network namespace per role on its own host, joined to the host's interface by a macvlan child; "
	if edge {
		network = "one network namespace per role on its own host, joined to the host's interface by a macvlan child behind an edge " +
			"(the role's eth0 a veth, piped to the child during LAN cells, through the WAN's impairment during WAN cells); "
	}
	return network + strings.Join(parts, ", ")
}

// hostsNoise reads every machine of the run, each through one of its
// agents (a machine holding two roles is read once): its CPU times (the
// host figures of a run across hosts, together) and its work besides the
// run (their Noise).
func hostsNoise(built []hostedRole, prefix string) func() (map[string]metrics.HostReading, error) {
	return func() (map[string]metrics.HostReading, error) {
		out := map[string]metrics.HostReading{}
		for _, b := range built {
			if _, seen := out[b.host.Dest()]; seen {
				continue
			}
			// A Sampler reader takes no context (see meter).
			r, err := role.HostNoise(context.Background(), b.conn, prefix)
			if err != nil {
				return nil, fmt.Errorf("%s host noise: %w", b.host.Role, err)
			}
			out[b.host.Dest()] = r
		}
		return out, nil
	}
}

// maxFetchedLog bounds one log copied back from a host: a runaway daemon's
// log is left out, named, rather than carried over the session. Well
// within role.MaxLine, the wire's bound on one answer.
const maxFetchedLog = 16 << 20

// maxFetchedLogs and maxFetchedBytes bound all the logs fetched from one
// role's host: a role writes a few dozen (a log per daemon and tool), and
// a compromised host must not fill this one's disk.
const (
	maxFetchedLogs  = 512
	maxFetchedBytes = 256 << 20
)

// logFilesOp lists the logs in a role's log directory on its host.
var logFilesOp = role.NewOp("nsbench.log-files", func(ctx context.Context, dir string) ([]logFile, error) {
	if err := role.CheckRead(ctx, dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var fs []logFile
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			fs = append(fs, logFile{Name: e.Name(), Size: info.Size()})
		}
	}
	return fs, nil
})

type logFile struct {
	Name string
	Size int64
}

// logToRead is one log in a role's log directory on its host.
type logToRead struct{ Dir, Name string }

// readLogOp reads one log on the role's host, at most maxFetchedLog+1
// bytes (a log that grew past the bound since it was listed is still not
// carried whole), and never through a symbolic link.
var readLogOp = role.NewOp("nsbench.read-log", func(ctx context.Context, l logToRead) ([]byte, error) {
	if !isBaseName(l.Name) {
		return nil, fmt.Errorf("log name %q is not a file name", l.Name)
	}
	if err := role.CheckRead(ctx, l.Dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(l.Dir, l.Name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFetchedLog+1))
})

// isBaseName reports whether name is a plain file name: no directory, no
// "." or "..".
func isBaseName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// fetchLogs copies role r's logs from dir on its host into local, the
// run's log directory, each within maxFetchedLog and all within
// maxFetchedLogs files and maxFetchedBytes. What the host answers is not
// trusted: a name that is not a plain file name of the role's own
// (<role>-…, as role.Role names every log) is refused, a file is only ever
// created, never overwritten (another host's log, the run's own), and the
// bounds hold on what arrives, not on the sizes the host claims.
func fetchLogs(ctx context.Context, r *role.Role, dir, local string, logf Logf) error {
	ctx, cancel := context.WithTimeout(ctx, fetchLogsTimeout)
	defer cancel()
	files, err := logFilesOp.On(ctx, r, dir)
	if err != nil {
		return fmt.Errorf("%s logs: %w", r.Name(), err)
	}
	out, err := safedir.Open("log directory", local)
	if err != nil {
		return fmt.Errorf("%s logs: %w", r.Name(), err)
	}
	defer out.Close()
	var errs []error
	fetched, total := 0, 0
	for _, f := range files {
		if !isBaseName(f.Name) || !strings.HasPrefix(f.Name, r.Name()+"-") {
			errs = append(errs, fmt.Errorf("refused the log name %q: not a file name of the %s role's", f.Name, r.Name()))
			continue
		}
		if fetched == maxFetchedLogs {
			logf("%s: more than %d logs: %s and those after it left on the host, not fetched", r.Name(), maxFetchedLogs, f.Name)
			break
		}
		if f.Size > maxFetchedLog || total+int(f.Size) > maxFetchedBytes {
			logf("%s: %s is %s: left on the host, not fetched (at most %s a log, %s in all)", r.Name(), f.Name, FormatSize(f.Size), FormatSize(maxFetchedLog), FormatSize(maxFetchedBytes))
			continue
		}
		b, err := readLogOp.On(ctx, r, logToRead{Dir: dir, Name: f.Name})
		if err == nil && (len(b) > maxFetchedLog || total+len(b) > maxFetchedBytes) {
			logf("%s: %s is larger than its host said (%s): left on the host, not fetched", r.Name(), f.Name, FormatSize(int64(len(b))))
			continue
		}
		if err == nil {
			fetched, total = fetched+1, total+len(b)
			err = writeNew(out, f.Name, b)
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s logs: %w", r.Name(), err)
	}
	return nil
}

// writeNew writes b to a new file name in d: never through a link, never
// over a file that is there.
func writeNew(d *safedir.Dir, name string, b []byte) error {
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("fetched log: %w", err)
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Close())
}

// fetchLogsTimeout bounds fetching one role's logs: a host whose session
// is gone fails at once; a slow link gets this long.
const fetchLogsTimeout = 30 * time.Second
