package nsbench

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestProcessAliveTreatsZombiesAsDead(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Not waited for yet: once it exits it stays a zombie until Wait.
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child still counts as alive")
		}
		time.Sleep(5 * time.Millisecond) // polling the child's state, not synchronising on time
	}
	cmd.Wait()
	if processAlive(cmd.Process.Pid) {
		t.Error("a reaped child counts as alive")
	}
}
