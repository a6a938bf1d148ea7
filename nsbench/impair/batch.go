package impair

import (
	"encoding/binary"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvBatch reads up to len(msgs) frames with one recvmmsg(2), each with
// the kernel's receive timestamp (SO_TIMESTAMPNS): the delay of a frame
// counts from its arrival at the port, not from the moment the forwarder
// got around to reading it.
type recvBatch struct {
	msgs  []mmsghdr
	iovs  []unix.Iovec
	bufs  [][]byte
	ctrls [][]byte
}

// mmsghdr is struct mmsghdr: a msghdr and the length received.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// ctrlLen holds one cmsg with a struct timespec.
var ctrlLen = unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))

func newRecvBatch(n, size int) *recvBatch {
	b := &recvBatch{msgs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n), bufs: make([][]byte, n), ctrls: make([][]byte, n)}
	for i := range n {
		b.bufs[i] = make([]byte, size)
		b.ctrls[i] = make([]byte, ctrlLen)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
	}
	return b
}

// recv blocks until at least one frame is there (or the socket's receive
// timeout passes), then takes what else is queued, up to the batch size.
func (b *recvBatch) recv(fd int) (int, error) {
	for i := range b.msgs {
		h := &b.msgs[i].hdr
		h.Iov = &b.iovs[i]
		h.SetIovlen(1)
		h.Control = &b.ctrls[i][0]
		h.SetControllen(ctrlLen)
		h.Flags = 0
		b.msgs[i].len = 0
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[0])),
		uintptr(len(b.msgs)), unix.MSG_WAITFORONE, 0, 0)
	runtime.KeepAlive(b)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// frame returns the i-th frame received, its kernel timestamp (ns of
// CLOCK_REALTIME; 0 when absent) and whether it was cut short.
func (b *recvBatch) frame(i int) (frame []byte, stamp int64, truncated bool) {
	m := &b.msgs[i]
	frame = b.bufs[i][:min(int(m.len), len(b.bufs[i]))]
	truncated = m.hdr.Flags&unix.MSG_TRUNC != 0
	return frame, parseStamp(b.ctrls[i][:m.hdr.Controllen]), truncated
}

// parseStamp finds the SCM_TIMESTAMPNS in a control buffer.
func parseStamp(ctrl []byte) int64 {
	for len(ctrl) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(ctrl) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(16) {
			d := ctrl[unix.CmsgLen(0):]
			sec := int64(binary.NativeEndian.Uint64(d[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(d[8:16]))
			return sec*1e9 + nsec
		}
		ctrl = ctrl[unix.CmsgSpace(l-unix.SizeofCmsghdr):]
	}
	return 0
}
