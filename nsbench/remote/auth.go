package remote

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// auth is the public-key methods to offer, in OpenSSH's order: --identity
// first, then the agent's keys, then (without --identity) ~/.ssh/id_*.
type auth struct {
	methods []ssh.AuthMethod
	names   []string // what is offered, for the error when none is accepted
	agent   net.Conn
}

func (a *auth) close() {
	if a.agent != nil {
		a.agent.Close()
	}
}

func (a *auth) tried() string { return strings.Join(a.names, ", ") }

// defaultKeys are OpenSSH's default identities, in its order.
var defaultKeys = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

func loadAuth(identity string) (*auth, error) {
	a := &auth{}
	var signers []ssh.Signer
	var skipped []string
	if identity != "" {
		s, err := readKey(identity)
		if err != nil && !(isEncrypted(err) && os.Getenv("SSH_AUTH_SOCK") != "") {
			return nil, fmt.Errorf("--identity: %w", err)
		}
		if s != nil {
			signers = append(signers, s)
			a.names = append(a.names, identity)
		}
	}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		conn, err := net.Dial("unix", sock)
		if err == nil {
			a.agent = conn
			a.names = append(a.names, "ssh-agent")
		}
	}
	if identity == "" {
		home, _ := os.UserHomeDir()
		for _, name := range defaultKeys {
			path := filepath.Join(home, ".ssh", name)
			s, err := readKey(path)
			switch {
			case err == nil:
				signers = append(signers, s)
				a.names = append(a.names, path)
			case !errors.Is(err, os.ErrNotExist):
				skipped = append(skipped, err.Error())
			}
		}
	}
	if len(signers) > 0 {
		a.methods = append(a.methods, ssh.PublicKeys(signers...))
	}
	if a.agent != nil {
		a.methods = append(a.methods, ssh.PublicKeysCallback(agent.NewClient(a.agent).Signers))
	}
	if len(a.methods) == 0 {
		msg := "no SSH key: no ssh-agent (SSH_AUTH_SOCK) and no usable ~/.ssh/id_ed25519, id_ecdsa or id_rsa; give --identity FILE"
		if len(skipped) > 0 {
			msg += " (skipped: " + strings.Join(skipped, "; ") + ")"
		}
		return nil, errors.New(msg)
	}
	return a, nil
}

func readKey(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		if isEncrypted(err) {
			return nil, fmt.Errorf("%s is passphrase-protected: load it into ssh-agent (ssh-add %s)", path, path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func isEncrypted(err error) bool {
	var pm *ssh.PassphraseMissingError
	return errors.As(err, &pm) || strings.Contains(err.Error(), "passphrase-protected")
}
