package nsbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Builds across hosts: each build's programs go to the host of every role
// that runs them (Option.Roles), beside that host's copy of twnsbench and
// over its connection, the way the copy itself went (remote.Copy.Add), so
// they are removed with it. Their SHA-256 and Go version are read there,
// and the results record each host's copy (results.ProgramCopy). A role
// on this machine (ROLE=local) runs the program where it is.

// placedCopy is a build's program as one site had it.
type placedCopy struct {
	build  *transport.Built
	option string
	copy   results.ProgramCopy
}

// CopyBuilds copies the programs of the builds among ts to the hosts of
// the roles that run them, at once, and records each copy in its build.
// Call it once, before the rows are checked there (CheckNamed) and
// before the run.
func (s *Sites) CopyBuilds(ctx context.Context, ts []transport.Transport) error {
	var builds []*transport.Built
	for _, t := range ts {
		if b, ok := t.(*transport.Built); ok && !slices.Contains(builds, b) {
			builds = append(builds, b)
		}
	}
	if len(builds) == 0 {
		return nil
	}
	placed := make([][]placedCopy, len(s.sites))
	errs := make([]error, len(s.sites))
	var wg sync.WaitGroup
	for i := range s.sites {
		wg.Go(func() {
			st := &s.sites[i]
			placed[i], errs[i] = st.copyBuilds(ctx, builds)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s %s: builds: %w", st.host.Role, st.host.Dest(), errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// In the inventory's order: the same record on every run.
	for _, ps := range placed {
		for _, p := range ps {
			p.build.PlaceCopy(p.option, p.copy)
		}
	}
	return nil
}

// copyBuilds copies to the site's host the builds' programs its role runs,
// each file once (two builds may name one program), and says where each
// is there.
func (st *Site) copyBuilds(ctx context.Context, builds []*transport.Built) ([]placedCopy, error) {
	var out []placedCopy
	for _, b := range builds {
		build := b.Build()
		for _, p := range build.Programs {
			if !slices.Contains(b.ProgramRoles(p.Option), st.host.Role) {
				continue
			}
			c, err := st.copyProgram(ctx, build.Label, p)
			if err != nil {
				return nil, err
			}
			out = append(out, placedCopy{build: b, option: p.Option, copy: c})
		}
	}
	return out, nil
}

// copyProgram puts program p of build label on the site's host (unless
// the same file is there already) and reads its version there.
func (st *Site) copyProgram(ctx context.Context, label string, p results.BuildProgram) (results.ProgramCopy, error) {
	c := results.ProgramCopy{Role: st.host.Role, Host: st.host.Dest()}
	if st.cp == nil { // this machine: the program itself runs
		c.Path, c.Version, c.SHA256 = p.Path, p.Version, p.SHA256
		return c, nil
	}
	if done, ok := st.copies[p.Path]; ok {
		return done, nil
	}
	prog, err := st.cp.Add(ctx, p.Path, transport.CopiedName(label, p.Option))
	if err != nil {
		return c, err
	}
	if prog.SHA256 != p.SHA256 {
		return c, fmt.Errorf("%s changed since the run read it (SHA-256 %s then, %s now)", p.Path, p.SHA256, prog.SHA256)
	}
	v, err := transport.ProgramVersionOn(ctx, st.agent.Wire, prog.Path)
	if err != nil {
		return c, fmt.Errorf("version of %s there: %w", prog.Path, err)
	}
	c.Path, c.Version, c.SHA256 = prog.Path, v, prog.SHA256
	if st.copies == nil {
		st.copies = map[string]results.ProgramCopy{}
	}
	st.copies[p.Path] = c
	return c, nil
}

// Copies are the builds' programs on each role's host, for the
// transports (transport.Testbed.ProgramAt).
func (s *Sites) Copies() transport.Copies {
	out := transport.Copies{}
	for _, st := range s.sites {
		for src, c := range st.copies {
			if out[st.host.Role] == nil {
				out[st.host.Role] = map[string]string{}
			}
			out[st.host.Role][src] = c.Path
		}
	}
	return out
}

// recipeFor is rc as role's host rebuilds a row from it to check it
// there: each build's program that host runs at its copy there, and the
// programs it does not run left out (their options' values or defaults
// stand), so that a check there looks at what that host runs.
func (s *Sites) recipeFor(role string, rc transport.Recipe) transport.Recipe {
	for _, st := range s.sites {
		if st.host.Role == role {
			return st.recipe(rc)
		}
	}
	return rc
}

func (st *Site) recipe(rc transport.Recipe) transport.Recipe {
	if st.cp == nil || len(rc.Builds) == 0 {
		return rc
	}
	out := transport.Recipe{Values: rc.Values}
	for _, d := range rc.Builds {
		if c, ok := st.copies[d.Path]; ok {
			d.Path = c.Path
			out.Builds = append(out.Builds, d)
		}
	}
	return out
}
