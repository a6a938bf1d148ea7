package preflight

import (
	"os"
	"strings"
	"testing"
)

func TestParseMemAvailable(t *testing.T) {
	f, err := os.Open("testdata/meminfo.txt") // this machine, 24 GiB
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := parseMemAvailable(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(24339828) * 1024; got != want {
		t.Errorf("MemAvailable = %d, want %d", got, want)
	}
}

func TestParseMemAvailableErrors(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"kernel before 3.14", "MemTotal:       24683620 kB\nMemFree:        24132120 kB\n", "no MemAvailable line"},
		{"unit", "MemAvailable:   24339828 MB\n", "unit is not kB"},
		{"number", "MemAvailable:   2433x828 kB\n", "parse MemAvailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseMemAvailable(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestMemAvailableLive(t *testing.T) {
	n, err := memAvailable()
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 {
		t.Errorf("MemAvailable = %d", n)
	}
}
