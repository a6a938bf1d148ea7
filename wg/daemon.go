package wg

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// DaemonProgram is upstream wireguard-go's program, looked for beside
// this binary: `make build` builds it there (bin/wireguard-go) from the
// wireguard-go module version in go.mod.
const DaemonProgram = "wireguard-go"

// Daemon is how a userspace device's daemon runs: wireguard-go's own
// program, as a wireguard-go user runs it, or the copy built into this
// binary (UserspaceCommand). Both are the same wireguard-go code; the
// built-in copy's peak RSS also holds this whole binary's pages and its
// other packages' start-up (about 6.5 MiB more when idle, on the
// development host), so upstream's program is preferred.
type Daemon struct {
	// Argv is the command line before the interface name.
	Argv []string
	// Env is added to the daemon's environment.
	Env []string
	// Upstream is true for wireguard-go's own program.
	Upstream bool
	// Fallback, set with the built-in copy, says why upstream's program
	// did not run.
	Fallback string
	// self is the twnsbench it was chosen beside.
	self string
}

// At is the daemon for a role whose twnsbench is self: where that is not
// the binary it was chosen beside (a role on another host, where only
// twnsbench itself is copied), the copy built into self there.
func (d Daemon) At(self string) Daemon {
	if self == "" || d.self == "" || self == d.self { // d.self "": a test's daemon, kept
		return d
	}
	return Daemon{Argv: []string{self, UserspaceCommand}, self: self,
		Fallback: "on another host only twnsbench is copied, not upstream's program"}
}

// Describe names the daemon for the results' facts.
func (d Daemon) Describe() string {
	if d.Upstream {
		return "upstream's program, " + d.Argv[0]
	}
	return "the copy built into twnsbench, `twnsbench " + UserspaceCommand + "`"
}

// UserspaceDaemon is the daemon a run's userspace devices use, chosen once
// (a test may replace it, before any device is created).
var UserspaceDaemon = sync.OnceValue(func() Daemon {
	self, err := os.Executable()
	if err != nil {
		return Daemon{Fallback: "find own binary: " + err.Error()}
	}
	return ChooseDaemon(self, filepath.Join(filepath.Dir(self), DaemonProgram), GoVersion())
})

// ProgramDaemon is the wireguard-go program at path, whatever its version
// (a build chosen with --build LABEL:wireguard-go=PATH), run as
// ChooseDaemon runs upstream's.
func ProgramDaemon(path string) Daemon {
	return Daemon{Argv: []string{path}, Env: []string{"WG_PROCESS_FOREGROUND=1", "LOG_LEVEL=error"}, Upstream: true}
}

// ChooseDaemon picks upstream's program at path when it is wireguard-go
// at version (the one built into self), else the copy built into self,
// saying why.
func ChooseDaemon(self, path, version string) Daemon {
	builtIn := func(why string) Daemon {
		return Daemon{Argv: []string{self, UserspaceCommand}, Fallback: why, self: self}
	}
	bi, err := buildinfo.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return builtIn("no " + path + " (`make build` builds it)")
	case err != nil:
		return builtIn(fmt.Sprintf("%s: %v", path, err))
	case bi.Path != goModule:
		return builtIn(fmt.Sprintf("%s is %s, not %s", path, bi.Path, goModule))
	case bi.Main.Version != version:
		return builtIn(fmt.Sprintf("%s is wireguard-go %s, not the %s built into twnsbench", path, bi.Main.Version, version))
	}
	// In the foreground, as `wireguard-go -f` would be, without the
	// banner it prints to recommend kernel WireGuard.
	return Daemon{Argv: []string{path}, Env: []string{"WG_PROCESS_FOREGROUND=1", "LOG_LEVEL=error"}, Upstream: true, self: self}
}
