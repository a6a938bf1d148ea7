package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// tcpForward is a test-only transport, registered through the same API as
// the real ones: a plain TCP port forwarder, in this test process, with
// its listeners and its dials inside the client namespace. It proves that
// a new transport needs one file and one registration, and nothing in
// results, report, compare, the orchestrator or the CLI.
type tcpForward struct{ variant string }

func init() {
	transport.Register(transport.Spec{
		Name:     "tcp-forward",
		Summary:  "test only: a plain TCP port forwarder in the client namespace",
		Options:  []transport.Option{{Name: "tcp-forward-base", Value: "30000", Usage: "test only: first local port"}},
		Variants: []string{"copy", "copy-again", "uncounted"},
		Sets:     []string{"test-set"},
		New: func(c transport.Config) (transport.Transport, error) {
			if _, err := strconv.Atoi(c.Options["tcp-forward-base"]); err != nil {
				return nil, errors.New("--tcp-forward-base: want a port number")
			}
			return tcpForward{variant: c.Variant}, nil
		},
	})
}

// absent is a test-only transport that can never run here, in test-set
// beside tcp-forward: a set skips it, naming it refuses the run.
type absent struct{}

func init() {
	transport.Register(transport.Spec{Name: "absent", Summary: "test only: never available", Sets: []string{"test-set"},
		New: func(transport.Config) (transport.Transport, error) { return absent{}, nil }})
}

func (absent) Name() string  { return "absent" }
func (absent) Label() string { return "Absent (test only)" }
func (absent) About() string { return "is never available." }
func (absent) Check() error {
	return &transport.UnavailableError{Transport: "absent", Reason: "this host lacks the absent thing", Fix: "none"}
}
func (absent) Up(context.Context, *transport.Testbed) (*transport.Path, error) {
	return nil, errors.New("absent: Up called")
}

func (f tcpForward) Name() string {
	if f.variant == "copy" {
		return "tcp-forward"
	}
	return "tcp-forward:" + f.variant
}
func (tcpForward) Label() string { return "TCP port forwarder (test only)" }
func (tcpForward) About() string {
	return "is a test-only Go port forwarder in the harness process: its CPU is in no role's cgroup."
}
func (tcpForward) Check() error { return nil }

func (t tcpForward) Up(ctx context.Context, tb *transport.Testbed) (*transport.Path, error) {
	// A forwarder in the harness process holds its sockets in the client's
	// namespace itself: test code, it opens the namespace by name (a
	// transport proper would start a program through the role).
	client, err := ns.Open(topology.DefaultSpec(tb.Prefix).NetnsName(topology.Client))
	if err != nil {
		return nil, err
	}
	server := tb.Roles[topology.Server].Addr()
	f := &forwarder{ns: client}
	// Every fixture service on a local port of its own; netperf's data
	// port is pinned on both ends, so it maps to itself.
	target := transport.Target{Host: "127.0.0.1", Ports: map[transport.Service]int{}, Carries: transport.CarriesTCP}
	for svc, remote := range transport.FixturePorts() {
		local := 30000 + remote%10000
		if svc == transport.ServiceNetperfData {
			local = remote
		}
		target.Ports[svc] = local
		if err := f.listen(local, netip.AddrPortFrom(server, uint16(remote))); err != nil {
			f.close()
			return nil, err
		}
	}
	// The label names what the path "negotiated", as a real transport's
	// names the cipher suite it read back; its fact, labelled, is a row of
	// the report's Environment.
	p := &transport.Path{Target: target, Facts: results.Facts{{Key: "forwarder", Label: "TCP forwarder", Value: "test-only Go io.Copy"}},
		Label: "TCP port forwarder (test only, " + t.variant + ")", Close: f.close,
		Carried: func() (int64, error) { return f.copied.Load(), nil }}
	if t.variant == "uncounted" {
		// A tunnel whose counter does not see the traffic: what a bypass
		// looks like to the orchestrator.
		p.Carried = func() (int64, error) { return 0, nil }
	}
	return p, nil
}

type forwarder struct {
	ns    *ns.NS
	mu    sync.Mutex
	lns   []net.Listener
	conns []net.Conn
	once  sync.Once
	// copied counts the bytes piped both ways: the forwarder's own count
	// of what it carried.
	copied atomic.Int64
}

func (f *forwarder) listen(port int, to netip.AddrPort) error {
	var ln net.Listener
	err := f.ns.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		return err
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.lns = append(f.lns, ln)
	f.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.pipe(c, to)
		}
	}()
	return nil
}

// pipe dials the server from inside the client namespace (never from the
// host's) and copies both ways.
func (f *forwarder) pipe(c net.Conn, to netip.AddrPort) {
	var up net.Conn
	err := f.ns.Do(func() (err error) {
		up, err = net.DialTimeout("tcp", to.String(), 5*time.Second)
		return err
	})
	if err != nil {
		c.Close()
		return
	}
	f.mu.Lock()
	f.conns = append(f.conns, c, up)
	f.mu.Unlock()
	go func() {
		io.Copy(countingWriter{up, &f.copied}, c)
		up.(*net.TCPConn).CloseWrite()
	}()
	io.Copy(countingWriter{c, &f.copied}, up)
	c.(*net.TCPConn).CloseWrite()
}

// countingWriter counts as it writes, so that the count is current while
// a connection is still open.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (f *forwarder) close() error {
	f.once.Do(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, l := range f.lns {
			l.Close()
		}
		for _, c := range f.conns {
			c.Close()
		}
		f.ns.Close()
	})
	return nil
}

// TestRegisteredTransportRunsEndToEnd: the test-only transport, registered
// above and named nowhere else, runs through the whole pipeline in two
// variants, each its own row labelled with what its path reported; its
// rows are in the JSON, the Markdown and the chart, with what it cannot
// carry marked not applicable.
func TestRegisteredTransportRunsEndToEnd(t *testing.T) {
	nstest.RequireRoot(t)
	doc, out := runAndRead(t, "--transports", "ssh,tcp-forward,tcp-forward:copy-again", "--wan", "off", "--quick", "--duration", "1s", "--warmup", "0",
		"--instruments", "iperf3-1,tcp_rr,scp,ping", "--tcp-forward-base", "30000")
	labels := map[string]string{}
	for _, tr := range doc.Transports {
		labels[tr.Name] = tr.Label
	}
	if labels["tcp-forward"] != "TCP port forwarder (test only, copy)" || labels["tcp-forward:copy-again"] != "TCP port forwarder (test only, copy-again)" {
		t.Errorf("rows %v: want one per variant, labelled with what the path reported", labels)
	}
	n := map[string]int{}
	for _, s := range doc.Samples {
		if s.Transport == "tcp-forward:copy-again" && s.Instrument == "iperf3-1" && s.Value <= 0 {
			t.Errorf("copy-again iperf3-1: %v", s.Value)
		}
		if s.Transport == "tcp-forward" {
			n[s.Instrument]++
			if s.Instrument == "iperf3-1" && (s.MovedBytes == nil || s.TunnelBytes == nil || *s.TunnelBytes < *s.MovedBytes) {
				t.Errorf("iperf3-1 moved %v bytes, the forwarder counted %v: want at least as many", s.MovedBytes, s.TunnelBytes)
			}
			if s.Value <= 0 {
				t.Errorf("%s: value %v", s.Instrument, s.Value)
			}
		}
	}
	if n["iperf3-1"] != 1 || n["tcp_rr"] != 1 || n["scp"] != 1 || n["ping"] != 0 {
		t.Errorf("tcp-forward samples per instrument %v: want iperf3-1, tcp_rr and scp once, no ping", n)
	}
	var about string
	for _, tr := range doc.Transports {
		if tr.Name == "tcp-forward" {
			about = tr.About + " " + tr.Facts["forwarder"]
		}
	}
	if !strings.Contains(about, "test-only Go port forwarder") || !strings.Contains(about, "io.Copy") {
		t.Errorf("transports[] entry: %q", about)
	}
	md, _ := os.ReadFile(filepath.Join(out, "bench-report.md"))
	for _, want := range []string{"| TCP port forwarder (test only, copy) | ", "| TCP port forwarder (test only, copy-again) | ",
		"- **TCP port forwarder (test only, copy)** is a test-only", "TCP port forwarder (test only, copy), ping: not applicable: the path carries TCP, not ICMP",
		"| TCP forwarder | test-only Go io.Copy |"} { // its labelled fact, an Environment row
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(out, "bench-chart.svg"))
	for _, label := range labels {
		if !strings.Contains(string(svg), label) {
			t.Errorf("the chart has no bar for %q", label)
		}
	}
	if code, _, stderr := runInProcess("run", "--transports", "tcp-forward:nope", "--out", t.TempDir()); code != exitRefused ||
		!strings.Contains(stderr, `transport tcp-forward: unknown variant "nope" (known: copy, copy-again, uncounted)`) {
		t.Errorf("an unknown variant: exit %d %q, want 2 and the known variants", code, stderr)
	}
	if code, _, stderr := runInProcess("run", "--transports", "tcp-forward", "--tcp-forward-base", "x", "--out", t.TempDir()); code != exitRefused || !strings.Contains(stderr, "--tcp-forward-base") {
		t.Errorf("a bad transport option: exit %d %q, want 2 and its message", code, stderr)
	}
}

// TestBypassIsAFailure: a path whose own counter did not see the bytes an
// instrument moved yields a failure naming the bypass, not a sample;
// instruments that move no counted bytes (TCP_RR) still measure.
func TestBypassIsAFailure(t *testing.T) {
	nstest.RequireRoot(t)
	out := t.TempDir()
	code, _, stderr := runInProcess("run", "--transports", "tcp-forward:uncounted", "--wan", "off", "--quick", "--duration", "1s", "--warmup", "0", "--instruments", "iperf3-1,tcp_rr", "--out", out)
	if code != exitSamplesFailed || !strings.Contains(stderr, "1 samples could not be measured") {
		t.Errorf("exit %d, stderr %q: want exit %d (samples failed, not 1: a regression's), the failed sample counted", code, stderr, exitSamplesFailed)
	}
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Failures) != 1 || doc.Failures[0].Instrument != "iperf3-1" ||
		!strings.Contains(doc.Failures[0].Error, "the traffic bypassed the tunnel: iperf3 moved") {
		t.Errorf("failures %+v: want iperf3-1's, naming the bypass", doc.Failures)
	}
	if len(doc.Samples) != 1 || doc.Samples[0].Instrument != "tcp_rr" || doc.Samples[0].TunnelBytes == nil || *doc.Samples[0].TunnelBytes != 0 {
		t.Errorf("samples %+v: want tcp_rr alone, with the counter's 0 recorded", doc.Samples)
	}
}

// TestSetSkipsWhatCannotRun: a named set runs what this host can and
// skips the rest with the reason, as the default set does; the same
// transport named alone refuses the run before anything exists.
func TestSetSkipsWhatCannotRun(t *testing.T) {
	nstest.RequireRoot(t)
	doc, _ := runAndRead(t, "--transports", "test-set", "--wan", "off", "--quick", "--duration", "1s", "--warmup", "0", "--instruments", "tcp_rr")
	rows := map[string]int{}
	for _, s := range doc.Samples {
		rows[s.Transport]++
	}
	if rows["tcp-forward"] != 1 || rows["tcp-forward:copy-again"] != 1 || rows["tcp-forward:uncounted"] != 1 || rows["absent"] != 0 {
		t.Errorf("samples per row %v: want every tcp-forward variant once, no absent", rows)
	}
	skipped := false
	for _, sk := range doc.Skipped {
		skipped = skipped || sk.Transport == "absent" && strings.Contains(sk.Reason, "this host lacks the absent thing")
	}
	if !skipped {
		t.Errorf("skipped %+v: want absent with its reason", doc.Skipped)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runInProcess("run", "--transports", "absent", "--out", out)
	if code != exitRefused || !strings.Contains(stderr, "absent cannot run here: this host lacks the absent thing") {
		t.Errorf("named alone: exit %d, %q; want a refusal with the reason", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the refused run created its output directory")
	}
}
