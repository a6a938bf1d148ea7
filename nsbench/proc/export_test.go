package proc

import "time"

var ParseCgroup2MountForTest = parseCgroup2Mount

// StampLines feeds writes to a line stamper started at start and returns
// its lines.
func StampLines(start time.Time, writes ...string) []Line {
	w := &lineStamps{start: start}
	for _, p := range writes {
		w.Write([]byte(p))
	}
	return w.done()
}
