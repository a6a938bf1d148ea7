package wg

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// maxIfName is the longest interface name Linux accepts (IFNAMSIZ - 1).
const maxIfName = 15

// IfName is the interface name of a role's device in the run with the
// given prefix: prefix + "-" + the role's first letter, e.g.
// "twnsb-3fa9c1-c" (a numbered role's: "twnsb-3fa9c1-2"). Names are unique per run and per role, because
// wireguard-go's control sockets (SocketDir/NAME.sock) are shared by every
// namespace on the host.
func IfName(prefix, role string) (string, error) {
	if prefix == "" || role == "" {
		return "", fmt.Errorf("wireguard interface name: empty prefix or role (%q, %q)", prefix, role)
	}
	name := prefix + "-" + role[:1]
	if n := strings.TrimLeft(role, "abcdefghijklmnopqrstuvwxyz"); n != "" && n != role {
		// A numbered role (client2 … client99, a server's many
		// clients) is its number, to fit: "twnsb-3fa9c1-64". The dash
		// keeps the run's name apart for clean (residue.RunOf).
		name = prefix + "-" + n
	}
	if err := checkIfName(name); err != nil {
		return "", err
	}
	return name, nil
}

func checkIfName(name string) error {
	if name == "" || len(name) > maxIfName || strings.ContainsAny(name, "/ \t\n") {
		return fmt.Errorf("wireguard interface name %q: want 1 to %d characters without / or spaces", name, maxIfName)
	}
	return nil
}

// SocketDir is where wireguard-go puts its UAPI sockets, and where wgctrl
// looks for them (both hard-code it). /var/run is /run on Debian.
const SocketDir = "/var/run/wireguard"

// SocketPath is the UAPI socket of a userspace device.
func SocketPath(name string) string { return filepath.Join(SocketDir, name+".sock") }

// CleanSockets removes the UAPI sockets whose interface names start with
// prefix and on which nobody answers any more (their daemon was killed
// before it could remove them), as wireguard-go does before it reuses a
// name. A socket that still answers is left alone and reported. It needs
// no other state and is safe to run twice.
func CleanSockets(prefix string) (removed []string, err error) {
	if prefix == "" {
		return nil, errors.New("clean wireguard sockets: empty prefix")
	}
	matches, err := filepath.Glob(filepath.Join(SocketDir, prefix+"*.sock"))
	if err != nil {
		return nil, fmt.Errorf("clean wireguard sockets: %w", err)
	}
	var errs []error
	for _, path := range matches {
		if c, derr := net.DialTimeout("unix", path, time.Second); derr == nil {
			c.Close()
			errs = append(errs, fmt.Errorf("clean wireguard sockets: %s is still served by a live daemon", path))
			continue
		}
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("clean wireguard sockets: %w", rerr))
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// Sockets lists the UAPI sockets whose interface names start with prefix.
func Sockets(prefix string) []string {
	matches, _ := filepath.Glob(filepath.Join(SocketDir, prefix+"*.sock"))
	return matches
}
