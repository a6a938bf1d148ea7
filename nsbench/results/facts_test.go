package results

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func keys(fs Facts) string {
	var ks []string
	for _, f := range fs {
		ks = append(ks, f.Key)
	}
	return strings.Join(ks, ",")
}

// TestFactsOrder: the reference's rows come first in its order, whatever
// order they were stated in; other facts follow as they came; a key stated
// twice keeps its first value; an empty value is no fact.
func TestFactsOrder(t *testing.T) {
	var fs Facts
	for _, f := range []Fact{
		{Key: "openssh", Label: "OpenSSH", Value: "OpenSSH_9.2"},
		{Key: "strongswan", Label: "strongSwan", Value: "5.9"},
		{Key: "wireguard", Label: "WireGuard", Value: "kernel module", Implementation: true},
		{Key: "sshuttle", Label: "sshuttle", Value: "1.1"},
		{Key: "tw", Label: "tw", Value: "tw version v3"},
		{Key: "wireguard", Label: "WireGuard", Value: "wireguard-go"},
		{Key: "netperf", Label: "netperf", Value: ""},
	} {
		fs.Add(f)
	}
	if got := keys(fs); got != "tw,openssh,wireguard,strongswan,sshuttle" {
		t.Errorf("order %s", got)
	}
	if fs.Get("wireguard") != "kernel module" || fs.Get("netperf") != "" {
		t.Errorf("facts %+v", fs)
	}
}

// TestRecordFacts: every fact stays with its transport's entry; only the
// labelled ones reach the Environment.
func TestRecordFacts(t *testing.T) {
	d := &Document{Transports: []Transport{{Name: "wireguard"}}}
	d.RecordFacts("wireguard", Facts{
		{Key: "wireguard", Label: "WireGuard", Value: "wireguard-go 0.0.2025 (userspace)", Implementation: true},
		{Key: "wireguard-go daemon", Value: "upstream's program"},
	})
	if tr := d.Transports[0]; tr.Facts["wireguard"] == "" || tr.Facts["wireguard-go daemon"] != "upstream's program" {
		t.Errorf("transport entry's facts %v", tr.Facts)
	}
	if keys(d.Env.Facts) != "wireguard" {
		t.Errorf("environment facts %+v: want the labelled one only", d.Env.Facts)
	}
}

// TestFactsJSON: facts are written as env.facts, and those the reference
// knows also at the top of env, where its reader finds them; reading back
// gives the same facts once. A document without env.facts (the
// reference's, twnsbench's before them) is read from the top of env, with
// the reference's labels and order.
func TestFactsJSON(t *testing.T) {
	e := Env{Kernel: "6.18"}
	for _, f := range []Fact{
		{Key: "openssh", Label: "OpenSSH", Value: "OpenSSH_9.2"},
		{Key: "wireguard", Label: "WireGuard", Value: "kernel module 1.0.0", Implementation: true},
		{Key: "tw", Label: "tw", Value: "tw version v3"},
		{Key: "strongswan", Label: "strongSwan", Value: "5.9"},
	} {
		e.Facts.Add(f)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var ref refEnv
	if err := json.Unmarshal(b, &ref); err != nil || ref.TW != "tw version v3" || ref.OpenSSH != "OpenSSH_9.2" || ref.WireGuard != "kernel module 1.0.0" || ref.Kernel != "6.18" {
		t.Errorf("as the reference reads it: %+v (%v)\n%s", ref, err, b)
	}
	var top map[string]any
	json.Unmarshal(b, &top)
	if _, ok := top["strongswan"]; ok {
		t.Errorf("a fact the reference does not know is at the top of env: %s", b)
	}
	var back Env
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Facts, e.Facts) {
		t.Errorf("read back %+v (%v), want %+v", back.Facts, err, e.Facts)
	}
	if b, _ := json.Marshal(Env{}); strings.Contains(string(b), "facts") {
		t.Errorf("no facts, yet %s", b)
	}

	old := `{"kernel": "6.1", "wireguard": "wireguard-go 0.0.2023", "relay": "Caddy 2.8", "tw": "tw version v2", "openssh": "OpenSSH_9.2p1"}`
	var o Env
	if err := json.Unmarshal([]byte(old), &o); err != nil {
		t.Fatal(err)
	}
	want := Facts{{Key: "tw", Label: "tw", Value: "tw version v2"}, {Key: "relay", Label: "tw relay", Value: "Caddy 2.8"},
		{Key: "openssh", Label: "OpenSSH", Value: "OpenSSH_9.2p1"}, {Key: "wireguard", Label: "WireGuard", Value: "wireguard-go 0.0.2023", Implementation: true}}
	if !reflect.DeepEqual(o.Facts, want) || o.Kernel != "6.1" {
		t.Errorf("an old env read as %+v", o)
	}
	if err := json.Unmarshal([]byte(`{"tw": 3}`), &o); err == nil {
		t.Error("env.tw as a number: read without error")
	}
}
