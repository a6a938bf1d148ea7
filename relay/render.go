package relay

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/twnsbench/twnsbench/nsbench/account"
)

// The relay's fixed ports, as tw's relay install uses them.
const (
	HTTPSPort    = 443   // Caddy, on every address of the relay namespace
	SSHPort      = 22    // sshd, on the relay's loopback only
	XrayAPIPort  = 10085 // Xray's API inbound, loopback only
	vlessPortOff = 10000 // a tenant's VLESS inbound is its remote port + 10000
)

// Tenant is the one tw server the relay serves: what its join request
// carried and what the harness's join response assigned to it.
type Tenant struct {
	ServerID   string   // CN of the server's client certificate; its path is /tw/<id>
	UUIDs      []string // VLESS ids allowed on its inbound: the server's, then each client's
	RemotePort int      // its reverse-forward port on the relay's loopback
	SSHPubkey  string   // the server's SSH public key (authorized_keys form)
	CACertPEM  string   // the server's CA, which signs the client certificates
}

// Config is what the relay's configuration files are rendered from. It is
// plain data: rendering is pure, and every path lies inside Dir.
type Config struct {
	Domain  string // the relay's TLS name, e.g. relay.tw.test
	Dir     string // the relay's private directory
	SSHUser string // the account the tenant's reverse tunnel logs in as
	Tenant  Tenant
	// LeafCert and LeafKey are the relay's certificate and key (see PKI).
	LeafCert, LeafKey string
	// HostKey is sshd's host key (NewHostKey), written to HostKeyPath on
	// every start: one per run, as a tw server pins it.
	HostKey []byte
}

var (
	serverIDRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) // as tw's renderers enforce
	uuidRe     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	userRe     = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,30}$`)
	domainRe   = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
)

// Validate checks what rendering would otherwise copy blindly into
// configuration files.
func (c Config) Validate() error {
	t := c.Tenant
	switch {
	case !domainRe.MatchString(c.Domain):
		return fmt.Errorf("relay config: bad domain %q", c.Domain)
	case !filepath.IsAbs(c.Dir) || strings.ContainsAny(c.Dir, " \t\n\"'{}"):
		return fmt.Errorf("relay config: directory %q must be an absolute path without spaces or quotes", c.Dir)
	case !userRe.MatchString(c.SSHUser):
		return fmt.Errorf("relay config: bad ssh user %q", c.SSHUser)
	case !serverIDRe.MatchString(t.ServerID):
		return fmt.Errorf("relay config: bad server id %q", t.ServerID)
	case t.RemotePort < 1024 || t.RemotePort+vlessPortOff > 65535 || t.RemotePort == XrayAPIPort:
		return fmt.Errorf("relay config: remote port %d out of range", t.RemotePort)
	case len(t.UUIDs) == 0:
		return fmt.Errorf("relay config: no VLESS ids for %s", t.ServerID)
	case strings.ContainsAny(strings.TrimSpace(t.SSHPubkey), "\n\"") || !strings.HasPrefix(t.SSHPubkey, "ssh-"):
		return fmt.Errorf("relay config: bad ssh public key for %s", t.ServerID)
	}
	for _, u := range t.UUIDs {
		if !uuidRe.MatchString(u) {
			return fmt.Errorf("relay config: bad VLESS id %q", u)
		}
	}
	return nil
}

// Paths of the rendered files and of what the daemons keep.
func (c Config) CaddyfilePath() string      { return filepath.Join(c.Dir, "Caddyfile") }
func (c Config) XrayConfigPath() string     { return filepath.Join(c.Dir, "xray.json") }
func (c Config) SSHDConfigPath() string     { return filepath.Join(c.Dir, "sshd", "sshd_config") }
func (c Config) AuthorizedKeysPath() string { return filepath.Join(c.Dir, "sshd", "authorized_keys") }
func (c Config) HostKeyPath() string        { return filepath.Join(c.Dir, "sshd", "ssh_host_ed25519_key") }
func (c Config) TenantCAPath() string {
	return filepath.Join(c.Dir, "tls", c.Tenant.ServerID+"-ca.crt")
}
func (c Config) caddyStorage() string { return filepath.Join(c.Dir, "caddy", "storage") }

// Path is the tenant's XHTTP path.
func (c Config) Path() string { return "/tw/" + c.Tenant.ServerID }

// VlessPort is the tenant's Xray inbound, Caddy's upstream.
func (c Config) VlessPort() int { return c.Tenant.RemotePort + vlessPortOff }

var caddyfileTmpl = template.Must(template.New("Caddyfile").Parse(`# twnsbench relay: tw's Caddyfile with the run's certificate instead of ACME
{
	admin off
	persist_config off
	auto_https disable_redirects
	storage file_system {{.Storage}}
}

{{.C.Domain}}:{{.HTTPSPort}} {
	tls {{.C.LeafCert}} {{.C.LeafKey}} {
		client_auth {
			mode require_and_verify
			trust_pool file {{.TenantCA}}
		}
		# TLS 1.3 only: a single argument to protocols sets the minimum.
		protocols tls1.3
	}

	@{{.C.Tenant.ServerID}} {
		path {{.Path}}*
		expression {http.request.tls.client.subject} == "CN={{.C.Tenant.ServerID}}"
	}
	handle @{{.C.Tenant.ServerID}} {
		reverse_proxy h2c://127.0.0.1:{{.Upstream}} {
			flush_interval -1
			stream_close_delay 5m
			transport http {
				versions h2c 1.1
				keepalive 120s
				keepalive_idle_conns 32
			}
		}
	}

	handle {
		respond 404
	}
}
`))

// Caddyfile is Caddy's configuration: mutual TLS 1.3 on :443 with the
// tenant's CA as the only trust, one route for the tenant's path and
// certificate subject to its Xray inbound (h2c), 404 for anything else;
// no admin endpoint, no ACME, storage in the relay's directory.
func (c Config) Caddyfile() string {
	var b bytes.Buffer
	err := caddyfileTmpl.Execute(&b, map[string]any{
		"C": c, "HTTPSPort": HTTPSPort, "TenantCA": c.TenantCAPath(),
		"Storage": c.caddyStorage(), "Path": c.Path(), "Upstream": c.VlessPort(),
	})
	if err != nil {
		panic(err) // the template and its data are fixed
	}
	return b.String()
}

var xrayTmpl = template.Must(template.New("xray").Parse(`{
  "log": { "loglevel": "warning" },
  "stats": {},
  "api": { "tag": "api", "services": ["HandlerService", "StatsService", "RoutingService"] },
  "policy": {
    "system": {
      "statsInboundUplink": true, "statsInboundDownlink": true,
      "statsOutboundUplink": true, "statsOutboundDownlink": true
    },
    "levels": { "0": { "statsUserUplink": true, "statsUserDownlink": true, "statsUserOnline": true } }
  },
  "inbounds": [
    {
      "tag": "api-in",
      "listen": "127.0.0.1",
      "port": {{.APIPort}},
      "protocol": "dokodemo-door",
      "settings": { "address": "127.0.0.1" }
    },
    {
      "tag": "vless-in-{{.ID}}",
      "listen": "127.0.0.1",
      "port": {{.VlessPort}},
      "protocol": "vless",
      "settings": {
        "clients": [{{range $i, $u := .UUIDs}}{{if $i}},{{end}}
          { "id": "{{$u}}", "email": "{{if eq $i 0}}{{$.ID}}{{else}}{{$u}}{{end}}" }{{end}}
        ],
        "decryption": "none"
      },
      "streamSettings": {
        "network": "xhttp",
        "xhttpSettings": { "path": "{{.Path}}", "mode": "stream-one" }
      }
    }
  ],
  "outbounds": [
    {
      "tag": "freedom",
      "protocol": "freedom",
      "settings": {
        "finalRules": [
          { "action": "allow", "ip": ["127.0.0.1/32"] }
        ]
      }
    },
    { "tag": "blackhole", "protocol": "blackhole" }
  ],
  "routing": {
    "rules": [
      { "type": "field", "inboundTag": ["api-in"], "outboundTag": "api" },
      { "type": "field", "ruleTag": "allow-{{.ID}}", "inboundTag": ["vless-in-{{.ID}}"], "port": "{{.SSHPort}},{{.RemotePort}}", "outboundTag": "freedom" },
      { "type": "field", "ruleTag": "deny-{{.ID}}", "inboundTag": ["vless-in-{{.ID}}"], "outboundTag": "blackhole" }
    ]
  }
}
`))

// XrayConfig is Xray's configuration, tw's relay template for one tenant:
// the API on loopback, the tenant's VLESS/XHTTP (stream-one) inbound with
// the server's and the clients' ids, a freedom outbound limited to
// 127.0.0.1, and routing that lets the tenant reach only the relay's sshd
// and its own reverse-forward port.
func (c Config) XrayConfig() string {
	var b bytes.Buffer
	err := xrayTmpl.Execute(&b, map[string]any{
		"APIPort": XrayAPIPort, "ID": c.Tenant.ServerID, "VlessPort": c.VlessPort(),
		"UUIDs": c.Tenant.UUIDs, "Path": c.Path(), "SSHPort": SSHPort,
		"RemotePort": c.Tenant.RemotePort,
	})
	if err != nil {
		panic(err)
	}
	return b.String()
}

// SSHDConfig is the relay sshd's configuration: loopback only (Xray's
// freedom outbound is its only client), key logins for the tenant account
// only, forwarding allowed (authorized_keys narrows it per key), no PAM so
// no host account is touched.
func (c Config) SSHDConfig() string {
	dir := filepath.Join(c.Dir, "sshd")
	lines := []string{
		"# twnsbench relay sshd: reverse tunnels of tw servers",
		"Port " + strconv.Itoa(SSHPort),
		"ListenAddress 127.0.0.1",
		"HostKey " + c.HostKeyPath(),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + c.AuthorizedKeysPath(),
	}
	lines = append(lines, account.SSHDLogins(c.SSHUser)...)
	return strings.Join(append(lines,
		"PermitTTY no",
		"X11Forwarding no",
		"AllowAgentForwarding no",
		"AllowTcpForwarding yes",
		"GatewayPorts no",
		"MaxStartups 100:30:200",
		"",
	), "\n")
}

// AuthorizedKeys is the tenant's line as tw's enrollment writes it
// (loopback source, restrict, reverse forward of its own port only, local
// forwarding pinned to a dead port) with command="/bin/false" added, so
// the tenant cannot run anything on the relay, not even the sudo commands
// tw's relay management would send.
func (c Config) AuthorizedKeys() string {
	return fmt.Sprintf(`command="/bin/false",from="127.0.0.1",restrict,port-forwarding,permitopen="127.0.0.1:1",permitlisten="127.0.0.1:%d" %s`+"\n",
		c.Tenant.RemotePort, strings.TrimSpace(c.Tenant.SSHPubkey))
}
