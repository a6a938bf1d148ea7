package metrics

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		file    string
		want    int64
		wantErr error // matched with errors.Is
	}{
		{file: "proc-self-status.txt", want: 1756},                // cat /proc/self/status
		{file: "proc-kthreadd-status.txt", wantErr: ErrNoVmHWM},   // a kernel thread
		{file: "proc-zombie-status.txt", wantErr: os.ErrNotExist}, // exited, not yet reaped
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := parseVmHWM(f)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("VmHWM = %d kB, want %d", got, tt.want)
			}
		})
	}
}

func TestParseVmHWMMalformed(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"not a number", "Name:\tx\nVmHWM:\t  12x kB\n", "parse VmHWM"},
		{"unit", "VmHWM:\t    1756 MB\n", "unit is not kB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseVmHWM(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestReadVmHWMSelf(t *testing.T) {
	kB, err := ReadVmHWM(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if kB < 1024 { // a Go test binary peaks at several MiB
		t.Errorf("VmHWM of the test process = %d kB", kB)
	}
}

// TestReadVmHWMExited reads a child while it is a zombie and after it has
// been reaped: both are "exited" (os.ErrNotExist).
func TestReadVmHWMExited(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	waitZombie(t, pid)
	if _, err := ReadVmHWM(pid); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("zombie: err = %v, want os.ErrNotExist", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadVmHWM(pid); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reaped: err = %v, want os.ErrNotExist", err)
	}
}

// waitZombie polls /proc/PID/stat until the process's state is Z.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// "PID (comm) S ...": the state follows the last ')'.
		if s := string(b); strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not exit: %s", pid, b)
		}
		time.Sleep(time.Millisecond)
	}
}
