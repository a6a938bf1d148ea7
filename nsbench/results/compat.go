package results

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// What the reference harness's (tw's Docker harness) JSON spells its own
// way, kept here in one place: its documents carry no transport entries,
// labels or facts, so these names are how they are read and written.

// LAN is the plain condition's name: the bridge as it is, measured first.
const LAN = "lan"

// referenceLabels name the reference harness's transports: its documents
// carry no labels, and its report used these.
var referenceLabels = map[string]string{
	"ssh":       "Pure SSH",
	"wireguard": "SSH over WireGuard",
	"tw":        "SSH over Tunnel Whisperer",
}

// ReferenceLabel is the label the reference's report gives transport, or
// "" for a transport it does not know.
func ReferenceLabel(transport string) string { return referenceLabels[transport] }

// referenceFacts are the rows of the reference's env block that twnsbench
// records as facts, in the reference's order, with the labels of its
// Environment table; relay is twnsbench's own, written there before
// env.facts existed. A fact with one of these keys is also written at the
// top of env under its key, where tw's reader looks (env.tw,
// env.wireguard); a document without env.facts (the reference's, or one
// of twnsbench before them) is read from there with these labels.
var referenceFacts = Facts{
	{Key: "tw", Label: "tw"},
	{Key: "relay", Label: "tw relay"},
	{Key: "openssh", Label: "OpenSSH"},
	{Key: "iperf3", Label: "iperf3"},
	{Key: "netperf", Label: "netperf"},
	{Key: "wireguard", Label: "WireGuard", Implementation: true},
}

// referenceRank orders facts for the Environment: the reference's rows by
// their place in its table, every other fact after them.
func referenceRank(key string) int {
	for i, f := range referenceFacts {
		if f.Key == key {
			return i
		}
	}
	return len(referenceFacts)
}

// envJSON is Env without its JSON methods.
type envJSON Env

// MarshalJSON writes e with its reference facts also at the top of env.
func (e Env) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(envJSON(e))
	if err != nil {
		return nil, err
	}
	var top bytes.Buffer
	for _, r := range referenceFacts {
		v := e.Facts.Get(r.Key)
		if v == "" {
			continue
		}
		k, _ := json.Marshal(r.Key)
		val, _ := json.Marshal(v)
		top.WriteByte(',')
		top.Write(k)
		top.WriteByte(':')
		top.Write(val)
	}
	if top.Len() == 0 {
		return b, nil
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("env: encoded as %q, not an object", b)
	}
	if len(b) == 2 { // {}: no comma before the first key
		return append([]byte("{"), append(top.Bytes()[1:], '}')...), nil
	}
	return append(b[:len(b)-1], append(top.Bytes(), '}')...), nil
}

// UnmarshalJSON reads env, and the reference's rows from the top of env
// where env.facts lacks them (the reference's documents, twnsbench's
// before env.facts).
func (e *Env) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*envJSON)(e)); err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	for _, r := range referenceFacts {
		raw, ok := top[r.Key]
		if !ok {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("env.%s: %w", r.Key, err)
		}
		r.Value = v
		e.Facts.Add(r)
	}
	return nil
}
