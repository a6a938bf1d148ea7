// Package wg builds WireGuard tunnels between two roles of the testbed:
// keys, one device per role (the kernel's, or wireguard-go run as the
// role's program), configuration through wgctrl, the handshake wait, and
// the choice between the two implementations with its reason.
//
// Both implementations are configured through the same wgctrl calls. A
// kernel device is reached only through a generic-netlink socket opened in
// the device's namespace, so every netlink and wgctrl call is one of this
// package's ops (device.go), carried out inside the role's namespace by
// the role (role.Op), each with a wgctrl client of its own. A userspace
// device is reached through its UAPI socket in SocketDir, which is shared
// by all namespaces: interface names must be unique on the host, not just
// in their namespace (IfName).
//
// A Device is torn down in the reverse order of its creation: the
// userspace daemon is stopped by PID (it removes its socket and its TUN
// device as it exits) or the kernel link is deleted; a socket or link that
// outlived a killed daemon is removed last.
package wg
