package metrics

import (
	"strings"
	"testing"
)

func TestTCPTable(t *testing.T) {
	// A listener on 5201 (0A), an established data connection (01) with
	// 0x2A30 bytes unacknowledged, one closed by the peer that the server
	// has not closed yet (08), one in TIME_WAIT (06), an orphan (closed,
	// inode 0) still delivering 0x100 bytes (FIN_WAIT1, 04), and an
	// established connection on another port.
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1451 0100007F:A2B4 01 00002A30:00000010 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1451 0100007F:A2B6 08 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1451 0100007F:A2B8 06 00000000:00000000 03:00000F5A 00000000     0        0 0 3 0000000000000000
   4: 0100007F:1452 0100007F:A2BC 04 00000100:00000000 01:00000030 00000002     0        0 0 1 0000000000000000 20 4 30 10 -1
   5: 0100007F:0016 0100007F:A2BA 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 20 4 30 10 -1
`
	table, err := parseTCPTable(strings.NewReader(tcp))
	if err != nil || len(table) != 6 {
		t.Fatalf("parseTCPTable: %d sockets, %v; want 6", len(table), err)
	}
	if n := OpenConns(table, 5201); n != 2 {
		t.Errorf("OpenConns(5201) = %d; want 2 (established + close-wait)", n)
	}
	if n := OpenConns(table, 22); n != 1 {
		t.Errorf("OpenConns(22) = %d, want 1", n)
	}
	if !Listening(table, 5201) || Listening(table, 22) || Listening(table, 5202) {
		t.Errorf("Listening: want 5201 only (22 and 5202 have no listener)")
	}
	if q := SendQueued(table); q != 0x2A30 {
		t.Errorf("SendQueued = %d; want %d (the established socket's, not the orphan's)", q, 0x2A30)
	}
	if !table[4].Orphan || table[1].Orphan || table[4].SendQueued != 0x100 {
		t.Errorf("orphans: %+v", table)
	}
	for _, bad := range []string{
		"hdr\n 0: 0100007F:ZZZZ 0100007F:1 01 00000000:00000000 00:00000000 00000000 0 0 7\n",
		"hdr\n 0: 0100007F:0016 0100007F:1 01 0000ZZ00:00000000 00:00000000 00000000 0 0 7\n",
		"hdr\n 0: 0100007F:0016 0100007F:1 01 00000000 00:00000000 00000000 0 0 7\n",
	} {
		if _, err := parseTCPTable(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
