package nsbench

import (
	"fmt"
	"time"
)

// RunOf is a sample's run among its cell's planned runs. Under --runs auto
// a cell's runs are the pilot's until the pilot is over (Pilot), then
// what the pilot fixed.
type RunOf struct {
	Run, Runs int
	Pilot     bool
	MaxRuns   int // under --runs auto, the most a pilot can fix
}

// String is "2/3", "7/11", or during a --runs auto pilot "3/6 of the
// pilot, at most 20".
func (r RunOf) String() string {
	if r.Pilot {
		return fmt.Sprintf("%d/%d of the pilot, at most %d", r.Run, r.Runs, r.MaxRuns)
	}
	return fmt.Sprintf("%d/%d", r.Run, r.Runs)
}

// Status is the run's position, for a live progress line.
type Status struct {
	Transport, Condition, Instrument string
	Run                              RunOf         // the sample's run among its cell's planned runs
	Done, Total                      int           // samples finished, samples still planned in all
	Elapsed                          time.Duration // since the first sample began
	ETA                              time.Duration // estimated time left; 0 when unknown
	// FirstGuess says the ETA rests on guesses: a cell still to run, or a
	// condition's set-up, has not been measured yet (before the first
	// round of every condition).
	FirstGuess bool
}
