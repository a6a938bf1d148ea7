package transport

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// What the IKE daemons' paths (libreswan, strongswan) share: each side's
// private directory, written afresh in its role, and the daemon's control
// socket, awaited there.

// confDir is one side's private directory as a condition starts it: what
// a previous condition left removed, its directories made (0700) and its
// files written (0600, they hold the PSK).
type confDir struct {
	Remove []string
	Dirs   []string
	Files  []confFile
}

type confFile struct {
	Path string
	Data []byte
}

func (c confDir) write() error {
	for _, p := range c.Remove {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	for _, d := range c.Dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	for _, f := range c.Files {
		if err := os.WriteFile(f.Path, f.Data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

var (
	confDirOp = role.NewOp("ipsec.write-conf-dir", func(ctx context.Context, c confDir) (role.Nothing, error) {
		paths := append(slices.Clone(c.Remove), c.Dirs...)
		for _, f := range c.Files {
			paths = append(paths, f.Path)
		}
		for _, p := range paths {
			if err := role.CheckPath(ctx, p); err != nil {
				return role.Nothing{}, err
			}
		}
		return role.Nothing{}, c.write()
	})
	dialUnixOp = role.NewOp("ipsec.dial-unix", func(ctx context.Context, path string) (role.Nothing, error) {
		if err := role.CheckRead(ctx, path); err != nil {
			return role.Nothing{}, err
		}
		c, err := net.DialTimeout("unix", path, 500*time.Millisecond)
		if err != nil {
			return role.Nothing{}, err
		}
		return role.Nothing{}, c.Close()
	})
)

// writeConf writes a side's directory c in role r, where its daemon reads
// it.
func writeConf(ctx context.Context, r *role.Role, c confDir) error {
	_, err := confDirOp.On(ctx, r, c)
	return err
}

// waitUnix waits until a unix socket accepts a connection in role r,
// giving up when ctx ends or p exits first.
func waitUnix(ctx context.Context, r *role.Role, path string, p *proc.Process) error {
	return proc.WaitUntil(ctx, fmt.Sprintf("%s in %s", path, r.Name()), func() error {
		_, err := dialUnixOp.On(ctx, r, path)
		return err
	}, p)
}
