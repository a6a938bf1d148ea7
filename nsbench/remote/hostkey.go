package remote

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError is a host key refused: unknown to known_hosts, changed
// from the one it holds, or revoked. Its message carries the offered key's
// SHA256 fingerprint and the fix.
type HostKeyError struct {
	Host        string // "HOST:PORT" as dialled
	KnownHosts  string
	Offered     ssh.PublicKey
	Known       []knownhosts.KnownKey // empty: the host is unknown
	Revoked     bool
	fingerprint string
}

// Changed reports whether known_hosts holds another key for the host.
func (e *HostKeyError) Changed() bool { return len(e.Known) > 0 }

func (e *HostKeyError) Error() string {
	host, port, _ := net.SplitHostPort(e.Host)
	switch {
	case e.Revoked:
		return fmt.Sprintf("host key %s %s is marked @revoked in %s; refusing it", e.Offered.Type(), e.fingerprint, e.KnownHosts)
	case e.Changed():
		k := e.Known[0]
		return fmt.Sprintf("HOST KEY CHANGED: the host offers %s %s but %s:%d holds %s %s; refusing (someone may be intercepting the connection; if the host was reinstalled, run ssh-keygen -R %s -f %s and add its new key)",
			e.Offered.Type(), e.fingerprint, k.Filename, k.Line, k.Key.Type(), ssh.FingerprintSHA256(k.Key),
			knownhosts.Normalize(e.Host), e.KnownHosts)
	default:
		return fmt.Sprintf("unknown host key %s %s (not in %s); if it is the host's (compare: ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on the host), add it: ssh-keyscan -p %s -t %s %s >> %s, or log in once with ssh -p %s %s and accept it",
			e.Offered.Type(), e.fingerprint, e.KnownHosts, port, keyscanType(e.Offered.Type()), host, e.KnownHosts, port, host)
	}
}

func keyscanType(t string) string {
	switch t {
	case ssh.KeyAlgoED25519:
		return "ed25519"
	case ssh.KeyAlgoRSA:
		return "rsa"
	default:
		return "ecdsa"
	}
}

// hostKeys checks host keys against one known_hosts file.
type hostKeys struct {
	file  string
	check ssh.HostKeyCallback
}

func newHostKeys(file string) (*hostKeys, error) {
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %w (give --known-hosts FILE)", err)
		}
		file = filepath.Join(home, ".ssh", "known_hosts")
	}
	check, err := knownhosts.New(file)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w (create it with ssh-keyscan HOST >> %s after checking the fingerprints, or give --known-hosts FILE)", err, file)
	}
	return &hostKeys{file: file, check: check}, nil
}

// callback is the HostKeyCallback: knownhosts' verdict, with its KeyError
// and RevokedError turned into a HostKeyError.
func (k *hostKeys) callback(host string, remote net.Addr, key ssh.PublicKey) error {
	err := k.check(host, remote, key)
	if err == nil {
		return nil
	}
	e := &HostKeyError{Host: host, KnownHosts: k.file, Offered: key, fingerprint: ssh.FingerprintSHA256(key)}
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &ke):
		e.Known = ke.Want
	case errors.As(err, &re):
		e.Revoked = true
	default:
		return err
	}
	return e
}

// algorithms are the host key algorithms known_hosts holds for host, so
// the server is asked for a key type known_hosts can vouch for: without
// this, a host known by its ed25519 key that prefers to offer ECDSA would
// look like a changed key. nil (any algorithm) for an unknown host.
func (k *hostKeys) algorithms(host string) []string {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil
	}
	probe, err := ssh.NewPublicKey(pub) // a fresh key no file can hold
	if err != nil {
		return nil
	}
	_, port, _ := net.SplitHostPort(host)
	p, _ := strconv.Atoi(port)
	var ke *knownhosts.KeyError
	if !errors.As(k.check(host, &net.TCPAddr{IP: net.IPv4zero, Port: p}, probe), &ke) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, known := range ke.Want {
		t := known.Key.Type()
		as := []string{t}
		if t == ssh.KeyAlgoRSA {
			as = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, a := range as {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}
