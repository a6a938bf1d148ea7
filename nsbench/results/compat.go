package results

// What the reference harness's (tw's Docker harness) JSON spells its own
// way, kept here in one place: its documents carry no transport entries,
// labels or facts, so these names are how they are read and written.

// LAN is the plain condition's name: the bridge as it is, measured first.
const LAN = "lan"

// referenceEnvField is the field of the reference's env block a fact named
// key fills (its tw, wireguard and relay rows), or nil.
func referenceEnvField(e *Env, key string) *string {
	switch key {
	case "tw":
		return &e.TW
	case "wireguard":
		return &e.WireGuard
	case "relay":
		return &e.Relay
	}
	return nil
}
