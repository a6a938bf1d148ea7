// Package metrics reads the cumulative counters a sample is measured with:
// host CPU from /proc/stat, the harness's own CPU (getrusage) and a
// process's peak RSS (VmHWM), and snapshots them together with the readers
// the caller supplies for each role's cgroup CPU and the client link's
// received bytes.
//
// Counters are never reset. The orchestrator takes a Snapshot just before
// and just after a measurement, and after.Sub(before) is the sample's Delta
// (the shape of tailscale's wgengine/bench Snapshot.Sub). The parsers are
// pure functions over io.Reader, tested on text captured from real /proc
// files in testdata/.
package metrics
