package metrics

import (
	"strings"
	"testing"
)

func TestCountOpenConns(t *testing.T) {
	// A listener on 5201 (0A), an established data connection (01), one
	// closed by the peer that the server has not closed yet (08), one in
	// TIME_WAIT (06), and an established connection on another port.
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1451 0100007F:A2B4 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1451 0100007F:A2B6 08 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1451 0100007F:A2B8 06 00000000:00000000 03:00000F5A 00000000     0        0 0 3 0000000000000000
   4: 0100007F:0016 0100007F:A2BA 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 20 4 30 10 -1
`
	n, err := countOpenConns(strings.NewReader(tcp), 5201)
	if err != nil || n != 2 {
		t.Errorf("countOpenConns = %d, %v; want 2 (established + close-wait)", n, err)
	}
	if n, _ := countOpenConns(strings.NewReader(tcp), 22); n != 1 {
		t.Errorf("port 22: %d, want 1", n)
	}
	if _, err := countOpenConns(strings.NewReader("hdr\n 0: 0100007F:ZZZZ 0100007F:1 01\n"), 1); err == nil {
		t.Error("a malformed port: want an error")
	}
}
