// Package impair puts a WAN condition (fixed delay and random loss) on the
// client's and the server's egress, and proves it took effect.
//
// A Condition is plain data. An Impairment applies it through one of two
// mechanisms with the same semantics — per direction, a fixed one-way delay
// of RTT/2 and independent random loss of the full figure, on the client's
// egress and on the server's egress; the relay has none:
//
//   - Netem: the kernel's netem qdisc through netlink on the client's and
//     the server's eth0 (limit 100000), read back after every Set, its
//     qdisc statistics as the counters.
//   - Userspace: where the kernel has no sch_netem, a forwarder process (the
//     hidden `impair-forwarder` subcommand, run in the switch namespace)
//     takes over from the bridge: the role ports leave br0, the forwarder
//     joins them with AF_PACKET sockets, delays and drops what the client
//     and the server send, and reports its counters over a unix socket.
//     Clear stops it and puts the ports back on the bridge. Across hosts
//     (Edges) one forwarder runs on each impaired role's host, through the
//     role, in place of the pipe between its eth0 and the wire
//     (topology's edge).
//
// A condition may also make the switch a narrow hop (NarrowHop: an MTU,
// answered with ICMP "fragmentation needed" or, for a PMTU black hole,
// not); only the forwarder can, and JudgeNarrow turns what a transport's
// bulk transfers met there into its verdict.
//
// Set is idempotent, Clear is safe to call twice, and Counters are
// cumulative snapshots: a cell's counters are the difference of two
// snapshots (Sub). ProbeRTT and Judge close the loop: the RTT measured
// before a cell and the loss counted after it, against what was configured.
package impair
