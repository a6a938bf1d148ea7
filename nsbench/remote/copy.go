package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"
)

// CopyRoot is where a copy lives on a host: /var/tmp, because /tmp is
// often mounted noexec and is a tmpfs that a copy would then take memory from.
const CopyRoot = "/var/tmp"

// Copy is this binary installed on a host for one run.
type Copy struct {
	Dir    string // CopyRoot/<run id>-<role>: unique per run and per role, so two "hosts" on one filesystem do not collide
	Path   string // Dir/twnsbench
	SHA256 string
	conn   *Conn
}

// Install streams the running binary to a new directory on the host
// (created with mkdir, so one that already exists is refused rather than
// reused), mode 0700, and checks its sha256 there before anyone runs it.
// Root writes it, checks it and owns it, for a sudo login too (through
// sudo -n): the binary root runs is root's from its first byte, in a
// directory no one else may enter, so the login (or anything running as
// it) cannot swap it, and RemoveStaleCopies recognises it.
// runID is the run's prefix; the role keeps copies of hosts sharing one
// filesystem apart. On failure it removes what it wrote.
func (c *Conn) Install(ctx context.Context, runID string) (*Copy, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%s: copy twnsbench: find own binary: %w", c.Host.Dest(), err)
	}
	f, err := os.Open(self)
	if err != nil {
		return nil, fmt.Errorf("%s: copy twnsbench: %w", c.Host.Dest(), err)
	}
	defer f.Close()
	dir := path.Join(CopyRoot, runID+"-"+c.Host.Role)
	cp := &Copy{Dir: dir, Path: path.Join(dir, "twnsbench"), conn: c}
	h := sha256.New()
	// The widening stands apart, before the chain whose every step must
	// hold (a directory that exists already stops it), and in no braces:
	// the login's shell may be another than sh. The chain is one sh -c
	// so that sudo runs all of it as root; the widening acts on sshd's
	// pipe, which sudo passes on (or relays) as the chain's stdin.
	chain := fmt.Sprintf("umask 077 && mkdir -m 700 %s && cat > %s && chmod 700 %s && sha256sum %s",
		quote(dir), quote(cp.Path), quote(cp.Path), quote(cp.Path))
	cmd := widenStdinPipe + "; " + c.AsRoot("sh -c "+quote(chain))
	out, err := c.Output(ctx, cmd, io.TeeReader(f, h))
	if err != nil {
		if !strings.Contains(err.Error(), "File exists") {
			cp.Remove()
		}
		return nil, fmt.Errorf("copy twnsbench: %w", err)
	}
	cp.SHA256 = hex.EncodeToString(h.Sum(nil))
	if got, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); got != cp.SHA256 {
		cp.Remove()
		return nil, fmt.Errorf("%s: copy twnsbench: %s has sha256 %q there, %s here; refusing to run it", c.Host.Dest(), cp.Path, got, cp.SHA256)
	}
	return cp, nil
}

// widenStdinPipe grows the pipe sshd feeds the command's stdin from 64 KiB
// to 1 MiB (F_SETPIPE_SZ, 1031 on every Linux), where perl is there to do
// it (perl-base is essential on Debian and Ubuntu); elsewhere it does
// nothing and the copy is only slower. sshd writes at most one pipeful per
// turn of its loop and holds the rest of the channel's 2 MiB window,
// regrowing that buffer as it goes: on a fresh connection in a VM, where
// page faults are dear, this made the copy of 27 MB take 0.6–1.2 s; with
// the wider pipe 0.2–0.4 s (two emulated machines at once, this repo's CI
// machine).
const widenStdinPipe = `perl -e 'fcntl(STDIN, 1031, 1 << 20)' 2>/dev/null`

// Command is the copy run as root with args (each quoted for the shell).
func (cp *Copy) Command(args ...string) string {
	words := []string{quote(cp.Path)}
	for _, a := range args {
		words = append(words, quote(a))
	}
	return cp.conn.AsRoot(strings.Join(words, " "))
}

// RemoveTimeout bounds Remove.
const RemoveTimeout = 10 * time.Second

// Remove deletes the copy's directory, under its own deadline so that it
// also runs after the run's context has ended. Safe to call twice.
func (cp *Copy) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), RemoveTimeout)
	defer cancel()
	if _, err := cp.conn.Output(ctx, cp.conn.AsRoot("rm -rf "+quote(cp.Dir)), nil); err != nil {
		return fmt.Errorf("remove the copy: %w", err)
	}
	return nil
}
