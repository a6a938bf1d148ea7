package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// ClientsFileName is the many-client sweep's document (run --clients)
// inside the output directory.
const ClientsFileName = "clients-results.json"

// Clients is one many-client sweep: per transport and client
// count N, N client namespaces loaded at once through their own paths to
// the one server. Env.Runs is how many times the sweep was asked to run
// (run --clients --runs), every count of every transport once a run; 0
// in older documents, which ran once.
type Clients struct {
	SchemaVersion int          `json:"schema_version"`
	Env           Env          `json:"env"`
	Counts        []int        `json:"counts"`       // the N asked for, in order
	DurationSec   float64      `json:"duration_sec"` // of every client's iperf3 stream
	Rows          []ClientsRow `json:"rows"`
	Skipped       []Skipped    `json:"skipped,omitempty"`
	Complete      bool         `json:"complete,omitempty"`
	Incomplete    string       `json:"incomplete,omitempty"`
	// Conditions are the WAN conditions the sweep measured under besides
	// the LAN (rows name theirs); absent: the LAN alone.
	Conditions []Condition `json:"conditions,omitempty"`
	ClientsBuilds
}

// ClientsBuilds are a sweep's builds side by side (rows NAME@LABEL):
// each build's programs, and per client count the verdict on build B's
// aggregate throughput against A's; absent without builds.
type ClientsBuilds struct {
	Builds map[string]Build `json:"builds,omitempty"` // by row
	// MinEffect is the verdicts' band (relative, 0.05 for 5 %).
	MinEffect float64          `json:"build_min_effect,omitempty"`
	Verdicts  []ClientsVerdict `json:"build_verdicts,omitempty"`
}

// ClientsVerdict is one build pair's verdict at N clients: one pair per
// run of the sweep, A's and B's aggregates of that run (a run that did
// not measure a client gives a lower bound).
type ClientsVerdict struct {
	N int `json:"n"`
	Verdict
}

// ClientsRow is one transport at one N under one condition. Error, when
// set, is why nothing of the row was measured. The row is the sweep's
// first run; Repeats are its later runs, in order.
type ClientsRow struct {
	Transport string `json:"transport"`
	Label     string `json:"label"`
	N         int    `json:"n"`
	// Condition is the WAN condition the row was measured under (a --wan
	// profile's name, "wan", "wan1" …); empty on the LAN.
	Condition string `json:"condition,omitempty"`
	ClientsWindow
	Timing *ClientsTiming `json:"timing,omitempty"`
	ClientsCost
	Error string `json:"error,omitempty"`
	// WAN is the condition as measured from the row's clients; nil on the
	// LAN.
	WAN *ClientsWAN `json:"wan,omitempty"`
	// Repeats are this transport and N measured again in the sweep's
	// later runs (Env.Runs), each a row of its own without repeats;
	// absent when the sweep ran once.
	Repeats []ClientsRow `json:"repeats,omitempty"`
}

// ClientsWindow is the clients' rates read over the window in which all of
// them were sending. A client whose stream failed is absent from
// PerClientMbps and named in Failed: it costs its share, not the row.
type ClientsWindow struct {
	PerClientMbps []float64 `json:"per_client_mbps"`  // each measured client's received rate over OverlapSec, in client order
	Failed        []string  `json:"failed,omitempty"` // "client3: iperf3: …"
	// OverlapSec is how long every measured client was surely sending at
	// once, on the harness's clock; each client's rate is over its whole
	// iperf3 intervals inside it. Absent in a document that read each
	// client over its own window.
	OverlapSec *float64 `json:"overlap_sec,omitempty"`
}

// ClientsWAN is a row's WAN condition as measured, once the clients'
// paths were up and before the load: the RTT from every client's
// namespace to the server, and the run's verification of the condition
// (the RTT probe and the loss probe from the first client, the
// impairment's counters over the row, a rate cap against the row's
// aggregate).
type ClientsWAN struct {
	// ClientRTTMs is each client's median RTT to the server (TCP
	// handshakes from its namespace), in client order; null where no
	// probe completed.
	ClientRTTMs  []*float64   `json:"client_rtt_ms"`
	Verification Verification `json:"verification"`
}

// Sweeps are the row's runs: the row itself, then its repeats.
func (r ClientsRow) Sweeps() []ClientsRow {
	first := r
	first.Repeats = nil
	return append([]ClientsRow{first}, r.Repeats...)
}

// ClientsCost is what the server's and the relay's transport processes
// used while the clients were loaded.
type ClientsCost struct {
	Server *RoleCost `json:"server,omitempty"`
	Relay  *RoleCost `json:"relay,omitempty"` // tw's; absent for a transport without one
}

// ClientsTiming is how long the N clients took to set up and tear down.
type ClientsTiming struct {
	// SetupSec: the namespaces, cgroups, fixtures, iperf3 servers and
	// every client's path, until the last client was ready.
	SetupSec float64 `json:"setup_sec"`
	// PathsSec is the transport's share of SetupSec: from the first
	// client's path to the last one's ready.
	PathsSec    float64 `json:"paths_sec"`
	TeardownSec float64 `json:"teardown_sec"`
	// Residue names what teardown left (it must be empty).
	Residue []string `json:"residue,omitempty"`
}

// RoleCost is what a role's transport processes used while every client
// was loaded: CPU-seconds over the measurement, and peak memory.
type RoleCost struct {
	What   string  `json:"what"` // "sshd and its sessions", "wireguard-go"
	CPUSec float64 `json:"cpu_sec"`
	// PeakKB is the transport leaf's memory.peak (since it was made), or
	// where the kernel keeps none, the sum of its processes' VmHWM
	// (PeakFrom says which); absent when neither could be read.
	PeakKB   *int64 `json:"peak_kb,omitempty"`
	PeakFrom string `json:"peak_from,omitempty"` // "memory.peak" or "VmHWM sum"
}

// ErrClients is Read's error for a many-client sweep's document: the
// caller that can take one reads it with ReadClients.
var ErrClients = errors.New("a many-client sweep's document (" + ClientsFileName + ", run --clients), not a run's results")

// isClients reports whether the JSON b is a many-client sweep's document:
// one with the client counts it swept.
func isClients(b []byte) bool {
	var probe struct {
		Counts []int `json:"counts"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.Counts != nil
}

// WriteClients writes c atomically.
func WriteClients(path string, c *Clients) error { return writeJSONAtomic(path, c) }

// ReadClients loads a many-client document.
func ReadClients(path string) (*Clients, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read clients results: %w", err)
	}
	return ParseClients(b, path)
}

// ParseClients is ReadClients of a document's bytes; name (the file's
// path) says in errors where they came from.
func ParseClients(b []byte, name string) (*Clients, error) {
	var c Clients
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("parse clients results %s: %w", name, err)
	}
	if !isClients(b) {
		return nil, fmt.Errorf("clients results %s: not a many-client sweep's document (no counts): an ordinary results file?", name)
	}
	if c.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("clients results %s: schema_version %d is newer than this twnsbench reads (%d)", name, c.SchemaVersion, SchemaVersion)
	}
	return &c, nil
}
