package transport

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Help outputs of tw v2.0.1 (usage lines and the flags offlineFlow reads),
// and what cobra prints for a command the binary does not have.
var twV201Help = map[string]string{
	"server join-relay":  "Join this server to a relay\n\nUsage:\n  tw server join-relay <relay-host> [flags]\n\nFlags:\n      --apply string   apply an admin join-response file\n",
	"server user create": "Create a client user\n\nUsage:\n  tw server user create [name] [flags]\n\nFlags:\n  -m, --map stringArray   port mapping clientPort:serverPort\n",
	"config export-user": "Issue a user\n\nUsage:\n  tw config export-user <name> [flags]\n",
	"config import":      "Import a bundle\n\nUsage:\n  tw config import <bundle.twctx> [flags]\n\nFlags:\n      --activate   switch to the imported context\n",
	"relay invite":       "Relay-mode commands\n\nUsage:\n  tw relay [command]\n",
	"join":               "Error: unknown command \"join\" for \"tw\"\n",
}

func TestOfflineFlow(t *testing.T) {
	if err := offlineFlow("tw version v2.0.1", twV201Help); err != nil {
		t.Errorf("v2.0.1: %v", err)
	}
	// A binary with only the invite flow is refused, naming the flow.
	invite := map[string]string{
		"server join-relay":  "Server-mode commands\n\nUsage:\n  tw server [command]\n",
		"server user create": twV201Help["server user create"],
		"config export-user": twV201Help["config export-user"],
		"config import":      twV201Help["config import"],
		"relay invite":       "Invite a server\n\nUsage:\n  tw relay invite [flags]\n",
		"join":               "Join a relay\n\nUsage:\n  tw join <relay> <code> [flags]\n",
	}
	err := offlineFlow("tw version v3.0.0", invite)
	if err == nil || !strings.Contains(err.Error(), "v3.0.0 has only the invite enrollment flow") || !strings.Contains(err.Error(), "tw server join-relay --apply") {
		t.Errorf("invite-only: %v", err)
	}
	// An old join-relay without --apply.
	old := map[string]string{}
	for k, v := range twV201Help {
		old[k] = v
	}
	old["server join-relay"] = "Usage:\n  tw server join-relay <relay-host> [flags]\n"
	if err := offlineFlow("tw version v1.0.0", old); err == nil || !strings.Contains(err.Error(), "lacks the offline provisioning commands") {
		t.Errorf("no --apply: %v", err)
	}
}

func TestYAMLField(t *testing.T) {
	doc := `mode: client
xray:
    uuid: f030b7e6-8ffd-4f33-a79a-df82374717ff
    relay_host: relay.tw.test
client:
    ssh_user: bench
    server_ssh_port: 20000
    tunnels:
        - local_port: 18022
          remote_port: 22
`
	for _, tc := range [][3]string{
		{"xray", "uuid", "f030b7e6-8ffd-4f33-a79a-df82374717ff"},
		{"client", "server_ssh_port", "20000"},
		{"client", "uuid", ""},
		{"mode", "x", ""},
	} {
		if got := yamlField(doc, tc[0], tc[1]); got != tc[2] {
			t.Errorf("%s.%s = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestJoinResponse checks the response against the fields tw's
// DecodeJoinResponse requires (version 1, relay host, path, remote port).
func TestJoinResponse(t *testing.T) {
	b, err := json.Marshal(joinResponse(twJoinRequest{Version: 1, ServerID: "vm-71e108c9", UUID: "u", RelayHost: twRelayHost}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"server_id":"vm-71e108c9","relay_host":"relay.tw.test","path":"/tw/vm-71e108c9","remote_port":20000,"ssh_user":"twrelay"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestCheckNamesWhatIsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // nothing on PATH
	nowhere := filepath.Join(t.TempDir(), "nope")
	err := (&TW{Caddy: nowhere}).Check()
	if !IsUnavailable(err) {
		t.Fatalf("want an UnavailableError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"tw not found (PATH)", "caddy not found (--caddy " + nowhere + ")", "xray not found (PATH)",
		"--tw PATH", "scripts/install-relay-tools.sh"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reason lacks %q: %s", want, msg)
		}
	}
	if strings.Count(msg, "scripts/install-relay-tools.sh") != 1 {
		t.Errorf("the install hint is repeated: %s", msg)
	}
}

// TestTWErrorLine: a failed tw command's reason is its "Error:" line, not
// the last line of the usage text cobra prints after it.
func TestTWErrorLine(t *testing.T) {
	out := "time=… level=WARN msg=\"relay update failed\"\n" +
		"Error: user \"bench\" already exists\n" +
		"Usage:\n  tw server user create <name> [flags]\n\nGlobal Flags:\n" +
		"      --log-level string   log level (debug, info, warn, error) (default \"info\")"
	if got, want := twError(out), `Error: user "bench" already exists`; got != want {
		t.Errorf("twError = %q, want %q", got, want)
	}
	if got := twError("panic: boom\nexit"); got != "exit" {
		t.Errorf("without an Error line: %q, want the last line", got)
	}
}

func TestSSHTunNegotiatedLine(t *testing.T) {
	log := "debug1: kex: algorithm: curve25519-sha256\n" +
		"debug1: kex: server->client cipher: chacha20-poly1305@openssh.com MAC: <implicit> compression: none\n" +
		"debug1: kex: client->server cipher: chacha20-poly1305@openssh.com MAC: <implicit> compression: none\n" +
		"debug1: kex: server->client cipher: aes128-ctr MAC: hmac-sha1 compression: none\n"
	all := kexLine.FindAllStringSubmatch(log, -1)
	if len(all) != 2 || all[1][1] != "aes128-ctr" || all[1][2] != "hmac-sha1" || all[0][2] != "<implicit>" {
		t.Errorf("matches %q", all)
	}
}
