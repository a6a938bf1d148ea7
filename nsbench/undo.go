package nsbench

import (
	"context"
	"errors"
	"fmt"
)

// undoStack holds the teardown of everything the run created. Each creation
// pushes its undo as soon as it succeeds; unwind runs them last-in
// first-out on every exit path, so teardown order is the reverse of set-up:
// transports' paths → fixtures' processes → role cgroups' leftovers →
// payload tmpfs → private directory → topology.
type undoStack struct {
	steps []undoStep
}

type undoStep struct {
	name string
	fn   func(context.Context) error
}

func (s *undoStack) push(name string, fn func(context.Context) error) {
	s.steps = append(s.steps, undoStep{name, fn})
}

// unwind runs every step, newest first, even when some fail, and returns
// all failures.
func (s *undoStack) unwind(ctx context.Context) error {
	var errs []error
	for i := len(s.steps) - 1; i >= 0; i-- {
		if err := s.steps[i].fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("teardown %s: %w", s.steps[i].name, err))
		}
	}
	s.steps = nil
	return errors.Join(errs...)
}
