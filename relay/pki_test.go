package relay

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestNewHostKey: an OpenSSH ed25519 private key, a new one each call.
func TestNewHostKey(t *testing.T) {
	a, err := NewHostKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewHostKey()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(a, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n")) {
		t.Errorf("host key %q: want OpenSSH's private key format", a[:min(len(a), 40)])
	}
	signer, err := ssh.ParsePrivateKey(a)
	if err != nil {
		t.Fatalf("parse host key: %v", err)
	}
	if typ := signer.PublicKey().Type(); typ != ssh.KeyAlgoED25519 {
		t.Errorf("host key type %s, want %s", typ, ssh.KeyAlgoED25519)
	}
	if bytes.Equal(a, b) {
		t.Error("two host keys are the same")
	}
}

// TestStartWantsHostKey: without a host key Start refuses before it
// writes or starts anything (a nil launcher would panic otherwise).
func TestStartWantsHostKey(t *testing.T) {
	_, err := Start(context.Background(), fixedConfig("/tmp/x"), Bins{}, nil)
	if err == nil || !strings.Contains(err.Error(), "no sshd host key") {
		t.Errorf("Start without a host key: %v, want refused", err)
	}
}
