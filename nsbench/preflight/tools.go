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

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// Tool says how to ask a program its version without side effects, and
// which Debian package installs it. The harness's own programs are in
// tools (scripts/install-deps.sh installs all of these); a transport
// states those of its own (transport.HostNeeds).
type Tool struct {
	Name    string   // looked up on PATH and in sbinDirs: never a path
	Args    []string // a read-only version flag
	Prefix  string   // the version line starts with this
	Sibling string   // no version flag: report the version of this harness tool from the same directory
	Package string   // Debian package
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
var tools = map[string]Tool{
	"iperf3":     {Args: []string{"--version"}, Prefix: "iperf ", Package: "iperf3"},
	"netperf":    {Args: []string{"-V"}, Prefix: "Netperf version", Package: "netperf, in Debian's non-free component"},
	"netserver":  {Args: []string{"-V"}, Prefix: "Netperf version", Package: "netperf, in Debian's non-free component"},
	"ssh":        {Args: []string{"-V"}, Prefix: "OpenSSH", Package: "openssh-client"},
	"scp":        {Sibling: "ssh", Package: "openssh-client"},
	"ssh-keygen": {Sibling: "ssh", Package: "openssh-client"},
	"sshd":       {Args: []string{"-V"}, Prefix: "OpenSSH", Package: "openssh-server"},
	"ip":         {Args: []string{"-V"}, Prefix: "ip utility", Package: "iproute2"},
	"tc":         {Args: []string{"-V"}, Prefix: "tc utility", Package: "iproute2"},
	"ethtool":    {Args: []string{"--version"}, Prefix: "ethtool version", Package: "ethtool"},
	"ping":       {Args: []string{"-V"}, Prefix: "ping from iputils", Package: "iputils-ping"},
}

// harnessTool is the harness's own program name as a Tool; one it does
// not know has no version flag.
func harnessTool(name string) Tool {
	t := tools[name]
	t.Name = name
	return t
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
// has a version flag; others are left out, and so is a name that is a
// path (a Tool names a program, found where the harness finds its own).
func ToolVersions(ts []Tool) map[string]string {
	v := make(map[string]string, len(ts))
	for _, t := range ts {
		if t.Name == "" || strings.Contains(t.Name, "/") {
			continue
		}
		path, err := lookTool(t.Name)
		if err != nil {
			continue
		}
		if s, err := toolVersion(t, path); err == nil {
			v[t.Name] = s
		}
	}
	return v
}

// toolVersion runs the tool's version flag and picks its version line.
func toolVersion(t Tool, path string) (string, error) {
	if t.Sibling != "" {
		sib := filepath.Join(filepath.Dir(path), t.Sibling)
		if _, err := os.Stat(sib); err != nil {
			if sib, err = lookTool(t.Sibling); err != nil {
				return "", fmt.Errorf("version from %s: %w", t.Sibling, err)
			}
		}
		return toolVersion(harnessTool(t.Sibling), sib)
	}
	if len(t.Args) == 0 {
		return "", errors.New("no known read-only version flag")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, t.Args...)
	cmd.Env = proc.Environ("LC_ALL=C") // root runs it: none of the operator's variables
	// The exit status is ignored: ssh -V writes to stderr, and old sshd
	// exits 1 after printing its version with the usage.
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s %s: %w", path, strings.Join(t.Args, " "), ctx.Err())
	}
	return parseVersion(string(out), t.Prefix)
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
			pkg = "Debian package " + t.Package
			c.Fix = "sudo scripts/install-deps.sh"
		}
		c.Detail = fmt.Sprintf("%v (%s)", err, pkg)
		return c, ""
	}
	c.OK = true
	v, err := toolVersion(harnessTool(name), path)
	if err != nil {
		c.Detail = fmt.Sprintf("%s (version unknown: %v)", path, err)
		return c, ""
	}
	c.Detail = path + ": " + v
	return c, v
}
