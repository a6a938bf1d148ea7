package results

import "slices"

// Fact is one thing a part of the run states about itself: a program's
// version, the implementation a path used, a relay's parts. A fact with a
// Label is a row of the report's Environment; one without stays with its
// transport's entry (Transport.Facts) only.
type Fact struct {
	Key   string `json:"key"`             // stable name, e.g. "wireguard"
	Label string `json:"label,omitempty"` // the Environment's row, e.g. "WireGuard"
	Value string `json:"value"`
	// Implementation marks a fact that changes what is measured (a
	// kernel or a userspace tunnel): compare refuses two runs that differ
	// in it. Other facts are versions, whose differences compare lists
	// but accepts.
	Implementation bool `json:"implementation,omitempty"`
}

// Facts is an ordered list of facts, one per key.
type Facts []Fact

// Get returns the value of the fact named key, or "".
func (fs Facts) Get(key string) string {
	for _, f := range fs {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// Add records f unless a fact of its key is already there (the first
// transport to state it wins: every condition builds the same path again).
// The reference's own rows come first, in its order, so the Environment
// reads as its table; the others follow in the order they came.
func (fs *Facts) Add(f Fact) {
	if f.Value == "" || slices.ContainsFunc(*fs, func(g Fact) bool { return g.Key == f.Key }) {
		return
	}
	rank := referenceRank(f.Key)
	i := len(*fs)
	for i > 0 && referenceRank((*fs)[i-1].Key) > rank {
		i--
	}
	*fs = slices.Insert(*fs, i, f)
}

// RecordFacts keeps a transport's facts with its entry in Transports, and
// those with a label in the Environment (Env.Facts).
func (d *Document) RecordFacts(transport string, facts Facts) {
	for i := range d.Transports {
		if d.Transports[i].Name != transport {
			continue
		}
		for _, f := range facts {
			if d.Transports[i].Facts == nil {
				d.Transports[i].Facts = map[string]string{}
			}
			d.Transports[i].Facts[f.Key] = f.Value
		}
	}
	for _, f := range facts {
		if f.Label != "" {
			d.Env.Facts.Add(f)
		}
	}
}
