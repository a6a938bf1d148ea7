package instrument

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// ProbeTimeout bounds each health probe: a part that does not answer in
// this time is taken as broken.
const ProbeTimeout = 10 * time.Second

// Answers checks, after a failed sample, that the server's service svc
// answers at the application level through job's target — a listening
// socket is not enough: the kernel accepts connections for a frozen
// daemon. The exchanges are the smallest each protocol has: `ssh … true`,
// an iperf3 test of 1 KiB, netperf TCP_RR of 5 one-byte transactions,
// many_rr's client on one connection for 100 ms, rpm's client --check (the
// configuration and one foreign probe).
func Answers(ctx context.Context, job *Job, svc transport.Service) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	port := strconv.Itoa(job.Target.Port(svc))
	switch svc {
	case transport.ServiceSSH:
		return Exchange(ctx, job)
	case transport.ServiceIPerf3:
		// runIperf3 waits out a server still closing the failed sample's
		// test ("server is busy") and asks once more.
		_, _, err := runIperf3(ctx, job, []string{"-c", job.Target.Host, "-p", port, "-n", "1K", "--connect-timeout", "3000", "-J"}, parseIperf3)
		return err
	case transport.ServiceNetperf, transport.ServiceNetperfData:
		res, err := job.Run(ctx, "netperf", "-H", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceNetperf)),
			"-t", "TCP_RR", "-l", "-5", "-P", "0", "--", "-r", "1,1")
		if err != nil {
			return fmt.Errorf("netperf: %w: %s", err, parseFirstLine(res.Stderr))
		}
		return nil
	case transport.ServiceRPM:
		res, err := job.Run(ctx, SelfTool, RPM{}.Tool(), "--addr", RPM{}.addr(job), "--check")
		if err != nil {
			return fmt.Errorf("%s: %w: %s", RPM{}.Tool(), err, parseFirstLine(res.Stderr))
		}
		return nil
	case transport.ServiceManyRR:
		res, err := job.Run(ctx, SelfTool, ManyRR{Conns: 1}.Args(&Job{Target: job.Target, Duration: 100 * time.Millisecond})...)
		if err != nil {
			return fmt.Errorf("%s: %w: %s", ManyRR{}.Tool(), err, parseFirstLine(res.Stderr))
		}
		return nil
	}
	return fmt.Errorf("no health probe for %s", svc)
}
