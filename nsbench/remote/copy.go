package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/textsafe"
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
	dir := path.Join(CopyRoot, runID+"-"+c.Host.Role)
	cp := &Copy{Dir: dir, Path: path.Join(dir, "twnsbench"), conn: c}
	sum, err := c.stream(ctx, self, "mkdir -m 700 "+quote(dir), cp.Path)
	if err != nil {
		if !strings.Contains(err.Error(), "File exists") {
			cp.Remove()
		}
		return nil, fmt.Errorf("copy twnsbench: %w", err)
	}
	cp.SHA256 = sum
	return cp, nil
}

// Program is a program of this machine copied beside a Copy on its host:
// where it is there and its SHA-256 as sha256sum read it there.
type Program struct {
	Path, SHA256 string
}

// programName is what a program copied beside twnsbench may be called: a
// plain file name of our own choosing, never the copy's own.
var programName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,79}$`)

// Add streams the program at src (a build's, chosen on this machine) into
// the copy's directory as name, over the same connection as the copy
// itself, and checks its sha256 there as Install does: root writes it
// into the root-owned 0700 directory (never over a file already there),
// so it is removed with the copy (Remove, or the agent when its session
// ends); on failure the caller removes the copy. name is checked, and every path is one
// quoted word: no name reaches the shell as words.
func (cp *Copy) Add(ctx context.Context, src, name string) (Program, error) {
	if !programName.MatchString(name) || name == "twnsbench" {
		return Program{}, fmt.Errorf("%s: copy %s: %q is not a name for a program beside the copy", cp.conn.Host.Dest(), src, name)
	}
	dst := path.Join(cp.Dir, name)
	// set -C: cat never writes through a name that is already there.
	sum, err := cp.conn.stream(ctx, src, "set -C", dst)
	if err != nil {
		return Program{}, fmt.Errorf("copy %s: %w", src, err)
	}
	return Program{Path: dst, SHA256: sum}, nil
}

// stream writes the local file src to dst on the host as root, mode 0700,
// after first (a shell step of ours: mkdir, set -C), and returns its
// sha256 as the host's sha256sum reads it, refusing it when that differs
// from what was sent (the caller removes the copy's directory, dst with
// it, before anything runs from there).
func (c *Conn) stream(ctx context.Context, src, first, dst string) (string, error) {
	f, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("%s: %w", c.Host.Dest(), err)
	}
	defer f.Close()
	h := sha256.New()
	// The widening stands apart, before the chain whose every step must
	// hold (a directory that exists already stops it), and in no braces:
	// the login's shell may be another than sh. The chain is one sh -c
	// so that sudo runs all of it as root; the widening acts on sshd's
	// pipe, which sudo passes on (or relays) as the chain's stdin.
	chain := fmt.Sprintf("umask 077 && %s && cat > %s && chmod 700 %s && sha256sum %s", first, quote(dst), quote(dst), quote(dst))
	cmd := widenStdinPipe + "; " + c.AsRoot("sh -c "+quote(chain))
	out, err := c.Output(ctx, cmd, io.TeeReader(f, h))
	if err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if got, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); got != sum {
		return "", fmt.Errorf("%s: %s has sha256 %s there, %s here; refusing to run it", c.Host.Dest(), dst, textsafe.Quote(got), sum)
	}
	return sum, nil
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
