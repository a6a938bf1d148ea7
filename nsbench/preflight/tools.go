package preflight

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// tool says how to ask a program its version without side effects, and
// which Debian package installs it (scripts/install-deps.sh installs all of
// these).
type tool struct {
	args    []string // a read-only version flag
	prefix  string   // the version line starts with this
	sibling string   // no version flag: report the version of this tool from the same directory
	pkg     string   // Debian package
}

// sshd: `sshd -V` asks the binary that will serve. It exits while parsing
// options, before reading sshd_config or host keys, so it needs neither
// root nor a configured server. OpenSSH releases without -V print "unknown
// option -- V", then the same version line and the usage; taking the line
// that starts with "OpenSSH" covers both. Not `ssh -V`, which asks another
// package's binary (equal on Debian only through a versioned dependency),
// nor dpkg, which is Debian-only and says what was installed rather than
// what is on PATH. The cost: 9.2's sshd prints "OpenSSH_9.2" without the
// "p1 Debian-2+deb12u10" that `ssh -V` gives (and that goes to env.openssh).
var tools = map[string]tool{
	"iperf3":     {args: []string{"--version"}, prefix: "iperf ", pkg: "iperf3"},
	"netperf":    {args: []string{"-V"}, prefix: "Netperf version", pkg: "netperf, in Debian's non-free component"},
	"netserver":  {args: []string{"-V"}, prefix: "Netperf version", pkg: "netperf, in Debian's non-free component"},
	"ssh":        {args: []string{"-V"}, prefix: "OpenSSH", pkg: "openssh-client"},
	"scp":        {sibling: "ssh", pkg: "openssh-client"},
	"ssh-keygen": {sibling: "ssh", pkg: "openssh-client"},
	"sshd":       {args: []string{"-V"}, prefix: "OpenSSH", pkg: "openssh-server"},
	"ip":         {args: []string{"-V"}, prefix: "ip utility", pkg: "iproute2"},
	"tc":         {args: []string{"-V"}, prefix: "tc utility", pkg: "iproute2"},
	"ethtool":    {args: []string{"--version"}, prefix: "ethtool version", pkg: "ethtool"},
	"ping":       {args: []string{"-V"}, prefix: "ping from iputils", pkg: "iputils-ping"},
	"wg":         {args: []string{"--version"}, prefix: "wireguard-tools", pkg: "wireguard-tools"},
	"openvpn":    {args: []string{"--version"}, prefix: "OpenVPN ", pkg: "openvpn"},
}

// sbinDirs are searched after PATH: sudo's secure_path, or a user's PATH,
// may lack them, and sshd lives in /usr/sbin.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// lookTool finds a program on PATH or in sbinDirs.
func lookTool(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if strings.Contains(name, "/") {
		return "", err
	}
	for _, dir := range sbinDirs {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s", name, strings.Join(sbinDirs, ", "))
}

// ToolVersions returns the version line of each tool that is installed and
// has a known version flag; others are left out.
func ToolVersions(names []string) map[string]string {
	v := make(map[string]string, len(names))
	for _, name := range names {
		path, err := lookTool(name)
		if err != nil {
			continue
		}
		if s, err := toolVersion(name, path); err == nil {
			v[name] = s
		}
	}
	return v
}

// toolVersion runs the tool's version flag and picks its version line.
func toolVersion(name, path string) (string, error) {
	t, ok := tools[name]
	if !ok {
		return "", errors.New("no known read-only version flag")
	}
	if t.sibling != "" {
		sib := filepath.Join(filepath.Dir(path), t.sibling)
		if _, err := os.Stat(sib); err != nil {
			if sib, err = lookTool(t.sibling); err != nil {
				return "", fmt.Errorf("version from %s: %w", t.sibling, err)
			}
		}
		return toolVersion(t.sibling, sib)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, t.args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// The exit status is ignored: ssh -V writes to stderr, and old sshd
	// exits 1 after printing its version with the usage.
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s %s: %w", path, strings.Join(t.args, " "), ctx.Err())
	}
	return parseVersion(string(out), t.prefix)
}

// parseVersion returns the first line of out that starts with prefix.
func parseVersion(out, prefix string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, prefix) && line != "" {
			return line, nil
		}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return "", fmt.Errorf("no version line starting %q in %q", prefix, first)
}

// checkTool finds a tool and asks its version.
func checkTool(name string) (Check, string) {
	c := Check{Name: name, Required: true}
	path, err := lookTool(name)
	if err != nil {
		pkg := "Debian package " + name + "?"
		c.Fix = "sudo apt-get install --no-install-recommends " + name
		if t, ok := tools[name]; ok {
			pkg = "Debian package " + t.pkg
			c.Fix = "sudo scripts/install-deps.sh"
		}
		c.Detail = fmt.Sprintf("%v (%s)", err, pkg)
		return c, ""
	}
	c.OK = true
	v, err := toolVersion(name, path)
	if err != nil {
		c.Detail = fmt.Sprintf("%s (version unknown: %v)", path, err)
		return c, ""
	}
	c.Detail = path + ": " + v
	return c, v
}
