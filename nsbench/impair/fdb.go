package impair

import "sync"

// fdb is the forwarder's MAC table, learned from source addresses as a
// bridge learns: a frame to a known unicast address leaves on that port
// only; broadcast, multicast and unknown destinations leave on every port
// but the one they came in on.
type fdb struct {
	mu    sync.RWMutex
	ports map[[6]byte]int
}

func newFDB() *fdb { return &fdb{ports: map[[6]byte]int{}} }

// learn records that src was seen on port.
func (f *fdb) learn(src [6]byte, port int) {
	if src[0]&1 != 0 { // a multicast source is bogus; never learn it
		return
	}
	f.mu.RLock()
	p, ok := f.ports[src]
	f.mu.RUnlock()
	if ok && p == port {
		return
	}
	f.mu.Lock()
	f.ports[src] = port
	f.mu.Unlock()
}

// egress returns where a frame to dst that arrived on in leaves: one port,
// or flood (every port but in), or none (the destination sits on in).
func (f *fdb) egress(dst [6]byte, in int) (port int, flood bool) {
	if dst[0]&1 != 0 {
		return -1, true
	}
	f.mu.RLock()
	p, ok := f.ports[dst]
	f.mu.RUnlock()
	switch {
	case !ok:
		return -1, true
	case p == in:
		return -1, false
	}
	return p, false
}
