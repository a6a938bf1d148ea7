package rpm

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// DialTimeout bounds each connection's TCP handshake.
const DialTimeout = 10 * time.Second

// client is one test's connections and probes.
type client struct {
	addr   string
	tls    *tls.Config
	urls   URLs
	failed chan error // a load-generating connection's failure
	mu     sync.Mutex
	loads  []*loadConn
	probes []probe // completed
	errs   int     // probes failed
}

// loadConn is a load-generating connection: its own transport, which
// holds one HTTP/2 connection, carrying one endless download or upload
// and the self probes sent on it.
type loadConn struct {
	up    bool
	tr    *http.Transport
	bytes atomic.Int64
}

// probe is a completed probe's times (ms): a foreign probe's three, or a
// self probe's HTTP time.
type probe struct {
	done           time.Time
	foreign        bool
	tcp, tls, http float64
}

func newClient(addr string) *client {
	return &client{addr: addr, failed: make(chan error, 2*MNP),
		tls: &tls.Config{ServerName: ServerName, InsecureSkipVerify: true, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS13}}
}

// transport is a transport whose connections go to the server over a new
// TCP connection and a full TLS 1.3 handshake (no session resumption).
func (c *client) transport() *http.Transport {
	d := net.Dialer{Timeout: DialTimeout}
	return &http.Transport{ForceAttemptHTTP2: true, DisableCompression: true,
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, "tcp", c.addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(conn, c.tls.Clone())
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		}}
}

// configure reads the server's .well-known configuration; its three URLs
// must share one host, as the draft requires.
func (c *client) configure(ctx context.Context) error {
	tr := c.transport()
	defer tr.CloseIdleConnections()
	resp, err := get(ctx, tr, "https://"+c.addr+ConfigPath)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	defer resp.Body.Close()
	var cfg Config
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if cfg.Version != 1 {
		return fmt.Errorf("configuration: version %d, want 1", cfg.Version)
	}
	var host string
	for _, u := range []string{cfg.URLs.Large, cfg.URLs.Small, cfg.URLs.Upload} {
		p, err := url.Parse(u)
		if err != nil || (host != "" && p.Host != host) {
			return fmt.Errorf("configuration: the URLs %v do not share one host", cfg.URLs)
		}
		host = p.Host
	}
	c.urls = cfg.URLs
	return nil
}

// get GETs u through tr with "Accept-Encoding: identity", as the draft
// requires, and checks that the answer is 200 over HTTP/2.
func get(ctx context.Context, tr *http.Transport, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s over %s, want 200 over HTTP/2", u, resp.Status, resp.Proto)
	}
	return resp, nil
}

// addLoad starts one load-generating connection in each direction.
func (c *client) addLoad(ctx context.Context, wg *sync.WaitGroup) {
	for _, up := range []bool{false, true} {
		lc := &loadConn{up: up, tr: c.transport()}
		c.mu.Lock()
		c.loads = append(c.loads, lc)
		c.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lc.run(ctx, c.urls); err != nil && ctx.Err() == nil {
				c.failed <- err
			}
		}()
	}
}

// run downloads the large object or uploads to the sink until ctx ends.
func (lc *loadConn) run(ctx context.Context, urls URLs) error {
	if lc.up {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, urls.Upload, &endless{n: &lc.bytes})
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := lc.tr.RoundTrip(req)
		if err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		resp.Body.Close()
		return fmt.Errorf("upload: the sink answered %s before the end", resp.Status)
	}
	resp, err := get(ctx, lc.tr, urls.Large)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer resp.Body.Close()
	buf := make([]byte, chunk)
	for {
		n, err := resp.Body.Read(buf)
		lc.bytes.Add(int64(n))
		if err != nil {
			return fmt.Errorf("download: after %d bytes: %w", lc.bytes.Load(), err)
		}
	}
}

// endless is an upload body that never ends, counting what was read.
type endless struct{ n *atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// loadBytes are the bytes moved down and up since the last call.
func (c *client) loadBytes() (down, up int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, lc := range c.loads {
		n := lc.bytes.Swap(0)
		if lc.up {
			up += n
		} else {
			down += n
		}
	}
	return down, up
}

// connections are the load-generating connections per direction.
func (c *client) connections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.loads) / 2
}

func (c *client) close() {
	for _, lc := range c.loads {
		lc.tr.CloseIdleConnections()
	}
}

// probeLoop launches a foreign and a self probe together at the rate in
// rate (pairs per second, as float64 bits) until ctx ends.
func (c *client) probeLoop(ctx context.Context, wg *sync.WaitGroup, rate *atomic.Uint64) {
	for {
		gap := time.Duration(float64(time.Second) / math.Float64frombits(rate.Load()))
		select {
		case <-ctx.Done():
			return
		case <-time.After(gap):
		}
		wg.Add(2)
		go func() { defer wg.Done(); c.record(ctx)(c.foreign(ctx)) }()
		go func() { defer wg.Done(); c.record(ctx)(c.self(ctx)) }()
	}
}

// record keeps a completed probe or counts a failed one; a probe cut by
// the end of the test is neither.
func (c *client) record(ctx context.Context) func(probe, error) {
	return func(p probe, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case err == nil:
			c.probes = append(c.probes, p)
		case ctx.Err() == nil:
			c.errs++
		}
	}
}

// foreign is a foreign probe: a new TCP connection (tcp_f), a TLS 1.3
// handshake (tls_f: its time over its one round trip) and a GET of the
// small object on it (http_f).
func (c *client) foreign(ctx context.Context) (probe, error) {
	t := time.Now()
	conn, err := (&net.Dialer{Timeout: DialTimeout}).DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return probe{}, fmt.Errorf("foreign probe: %w", err)
	}
	defer conn.Close()
	p := probe{foreign: true, tcp: ms(time.Since(t))}
	tc := tls.Client(conn, c.tls.Clone())
	t = time.Now()
	if err := tc.HandshakeContext(ctx); err != nil {
		return probe{}, fmt.Errorf("foreign probe: TLS: %w", err)
	}
	p.tls = ms(time.Since(t)) / tls13RoundTrips
	var used atomic.Bool
	tr := &http.Transport{ForceAttemptHTTP2: true, DisableCompression: true,
		DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
			if used.Swap(true) {
				return nil, errors.New("a foreign probe's connection is used once")
			}
			return tc, nil
		}}
	defer tr.CloseIdleConnections()
	t = time.Now()
	if err := small(ctx, tr, c.urls.Small); err != nil {
		return probe{}, fmt.Errorf("foreign probe: %w", err)
	}
	p.http, p.done = ms(time.Since(t)), time.Now()
	return p, nil
}

// tls13RoundTrips is a full TLS 1.3 handshake's round trips until the
// client may send data.
const tls13RoundTrips = 1

// self is a self probe: a GET of the small object on a load-generating
// connection chosen uniformly at random (http_l).
func (c *client) self(ctx context.Context) (probe, error) {
	c.mu.Lock()
	lc := c.loads[rand.IntN(len(c.loads))]
	c.mu.Unlock()
	t := time.Now()
	if err := small(ctx, lc.tr, c.urls.Small); err != nil {
		return probe{}, fmt.Errorf("self probe: %w", err)
	}
	return probe{http: ms(time.Since(t)), done: time.Now()}, nil
}

// small GETs the 1-byte object and reads it whole.
func small(ctx context.Context, tr *http.Transport, u string) error {
	resp, err := get(ctx, tr, u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && n != 1 {
		err = fmt.Errorf("GET %s: %d bytes, want 1", u, n)
	}
	return err
}

// window are the times of the probes completed in the last MAD intervals
// before now.
func (c *client) window(now time.Time) Probes {
	c.mu.Lock()
	defer c.mu.Unlock()
	var w Probes
	from := now.Add(-MAD * ID)
	for _, p := range c.probes {
		switch {
		case !p.done.After(from) || p.done.After(now):
		case p.foreign:
			w.TCPf, w.TLSf, w.HTTPf = append(w.TCPf, p.tcp), append(w.TLSf, p.tls), append(w.HTTPf, p.http)
		default:
			w.HTTPl = append(w.HTTPl, p.http)
		}
	}
	return w
}

// counts are w's probes, all completed ones and the failed ones.
func (c *client) counts(w Probes) Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := Counts{Foreign: len(w.TCPf), Self: len(w.HTTPl), Failed: c.errs}
	for _, p := range c.probes {
		if p.foreign {
			n.ForeignAll++
		} else {
			n.SelfAll++
		}
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
