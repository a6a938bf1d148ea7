package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
)

// TestAppInstrumentsEndToEnd: --instruments app measures connection
// set-up (netperf TCP_CRR), SSH logins, 50 connections at once
// (twnsbench's many-rr client against its server fixture) and
// responsiveness under working conditions (its rpm client against its
// HTTP/2 server fixture) through Pure SSH and wireguard-go with the real
// tools, and all reach the report.
func TestAppInstrumentsEndToEnd(t *testing.T) {
	nstest.RequireRoot(t)
	doc, out := runAndRead(t, "--transports", "ssh,wireguard-go", "--wan", "off", "--quick", "--duration", "2s", "--warmup", "0", "--instruments", "app")
	if len(doc.Failures) > 0 || len(doc.Skipped) > 0 {
		t.Fatalf("failures %+v skipped %+v", doc.Failures, doc.Skipped)
	}
	seen := map[string]bool{}
	for _, s := range doc.Samples {
		seen[s.Transport+" "+s.Instrument] = true
		switch s.Instrument {
		case "tcp_crr":
			// A connection costs at least a few round trips of tens of µs
			// and at most a second here.
			if s.Unit != "conn/s" || s.Value < 1 || s.Value > 1e6 || s.P50Us == nil || s.P99Us == nil || *s.P50Us <= 0 || *s.P99Us < *s.P50Us {
				t.Errorf("%s tcp_crr: %v %s p50 %v p99 %v", s.Transport, s.Value, s.Unit, s.P50Us, s.P99Us)
			}
		case "ssh_setup":
			p50, p99, n := s.Extra["p50_sec"], s.Extra["p99_sec"], s.Extra["logins"]
			// Logins back to back for 2 s: the rate is their count over their time.
			if s.Unit != "sessions/s" || n < 1 || p50 <= 0 || p99 < p50 || p99 > 10 || s.Value < 1/p99/1.01 || s.Value > 1/(p50/2) {
				t.Errorf("%s ssh_setup: %v %s, %v logins, p50 %v p99 %v", s.Transport, s.Value, s.Unit, n, p50, p99)
			}
		case "many_rr":
			// 50 closed-loop connections share the path about equally.
			if s.Unit != "trans/s" || s.Value <= 0 || s.Extra["per_conn_tps"]*50 < s.Value*0.999 || s.Extra["per_conn_tps"]*50 > s.Value*1.001 ||
				s.P50Us == nil || s.P99Us == nil || *s.P99Us < *s.P50Us || s.Extra["p999_us"] < *s.P99Us || s.Extra["jain"] < 0.5 || s.Extra["jain"] > 1 {
				t.Errorf("%s many_rr: %v %s p50 %v p99 %v extra %v", s.Transport, s.Value, s.Unit, s.P50Us, s.P99Us, s.Extra)
			}
		case "rpm":
			// Responsiveness from probes of both kinds under load in both
			// directions, the components each a positive time.
			x := s.Extra
			if s.Unit != "RPM" || !(s.Value > 0) || math.IsInf(s.Value, 0) || !(x["rpm_p90"] > 0) || x["rpm_p90"] > s.Value*1.001 ||
				x["foreign_probes"] < 1 || x["self_probes"] < 1 || !(x["download_mbps"] > 0) || !(x["upload_mbps"] > 0) ||
				!(x["tcp_f_ms"] > 0) || !(x["tls_f_ms"] > 0) || !(x["http_f_ms"] > 0) || !(x["http_l_ms"] > 0) {
				t.Errorf("%s rpm: %v %s extra %v", s.Transport, s.Value, s.Unit, x)
			}
			// 2 s cannot converge (the draft's rule needs 8 intervals of
			// 1 s): the sample is kept, marked, out of its cells.
			if s.Excluded() != "not converged" {
				t.Errorf("%s rpm: a 2 s test counted (extra %v)", s.Transport, x)
			}
		default:
			t.Errorf("%s: instrument %s was not asked for", s.Transport, s.Instrument)
		}
	}
	for _, want := range []string{"ssh tcp_crr", "ssh ssh_setup", "ssh many_rr", "ssh rpm", "wireguard-go tcp_crr", "wireguard-go ssh_setup", "wireguard-go many_rr", "wireguard-go rpm"} {
		if !seen[want] {
			t.Errorf("no %s sample (have %v)", want, seen)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "bench-report.md"))
	if err != nil || !strings.Contains(string(md), "SSH login p99") || !strings.Contains(string(md), "conn/s") || !strings.Contains(string(md), "Jain's fairness index") ||
		!strings.Contains(string(md), "## Samples kept out") || !strings.Contains(string(md), "| rpm | 1 | not converged |") {
		t.Errorf("the report does not show the app set's metrics (%v)", err)
	}
}
