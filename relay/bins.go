package relay

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Caddy's Caddyfile features the relay needs (trust_pool in client_auth,
// stream_close_delay) arrived in 2.8; Debian's 2.6 rejects the file.
const minCaddyMinor = 8

// The pinned versions scripts/install-relay-tools.sh installs.
const (
	CaddyModule = "github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9"
	XrayModule  = "github.com/xtls/xray-core/main@v1.260327.0"
)

// InstallHint is how to get Caddy and Xray.
const InstallHint = "install them with scripts/install-relay-tools.sh DIR (go install " + CaddyModule +
	" and " + XrayModule + ", renamed xray), then pass --caddy DIR/caddy --xray DIR/xray"

var caddyVersionRe = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)\S*`)

// CaddyVersion returns Caddy's version, or an error when the binary does
// not run or is older than 2.8. A Caddy built with `go install` prints
// "unknown" for `caddy version`; its module version is then read from
// `caddy build-info`.
func CaddyVersion(bin string) (string, error) {
	out, err := versionOutput(bin, "version")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(out) == "unknown" {
		if info, err := versionOutput(bin, "build-info"); err == nil {
			out = caddyModuleVersion(info)
		}
	}
	return checkCaddyVersion(out)
}

// caddyModuleVersion finds Caddy's own module in `caddy build-info`
// ("mod\tgithub.com/caddyserver/caddy/v2\tv2.11.9\th1:…").
func caddyModuleVersion(info string) string {
	for _, line := range strings.Split(info, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[0] == "mod" || f[0] == "dep") && f[1] == "github.com/caddyserver/caddy/v2" {
			return f[2]
		}
	}
	return "unknown"
}

func checkCaddyVersion(out string) (string, error) {
	m := caddyVersionRe.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return "", fmt.Errorf("caddy version: cannot read %q", firstLine(out))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	v := "v" + strings.TrimPrefix(m[0], "v")
	if major < 2 || major == 2 && minor < minCaddyMinor {
		return v, fmt.Errorf("caddy %s is too old (need ≥ 2.%d for trust_pool and stream_close_delay)", v, minCaddyMinor)
	}
	return v, nil
}

var xrayVersionRe = regexp.MustCompile(`^Xray (\d+\.\d+\.\d+)`)

// XrayVersion runs `xray version` and returns its first line.
func XrayVersion(bin string) (string, error) {
	out, err := versionOutput(bin, "version")
	if err != nil {
		return "", err
	}
	return checkXrayVersion(out)
}

func checkXrayVersion(out string) (string, error) {
	m := xrayVersionRe.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return "", fmt.Errorf("xray version: not an Xray binary: %q", firstLine(out))
	}
	return "Xray " + m[1], nil
}

func versionOutput(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, firstLine(string(out)))
	}
	return string(out), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
