package transport

// The run's ssh and scp clients (scp, the readiness exchange, ssh -w,
// sshuttle's ssh, tw's handshake) talk only to sshds of the run, whose
// one host key the run made (StartFixtures): they pin that key and read
// nothing of the operator's SSH set-up — no ssh_config (-F /dev/null), no
// known_hosts but the run's, no agent, no identity but the run's key.

// ServerHostKeyAlias is the name the run's known_hosts gives the server's
// host key: every client looks the key up under it, whatever address or
// port it dials (the server's, a tunnel's inner end, a forwarded port on
// 127.0.0.1).
const ServerHostKeyAlias = "twnsbench-server"

// SSHClientOptions are the options that pin the run's host key in
// knownHosts and use only the run's key, for ssh and scp alike. -i comes
// last, so that a caller's reference options can precede it.
func SSHClientOptions(keyPath, knownHosts string) []string {
	return []string{
		"-F", "/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + knownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "HostKeyAlias=" + ServerHostKeyAlias,
		"-o", "CheckHostIP=no",
		"-o", "UpdateHostKeys=no",
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityAgent=none",
		"-i", keyPath,
	}
}

// ClientOptions are SSHClientOptions for the fixtures' key and host key.
func (f *Fixtures) ClientOptions() []string { return SSHClientOptions(f.KeyPath, f.KnownHosts) }

// knownHostsLine pins the server's host key, its public key line as
// ssh-keygen wrote it, under ServerHostKeyAlias.
func knownHostsLine(pub []byte) []byte {
	return append([]byte(ServerHostKeyAlias+" "), pub...)
}
