package report

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The HTML page in a real browser: headless Chromium loads the page as a
// file, alone in its directory, with every host name unresolvable; the
// test keeps its screenshots (light and dark) and the DOM Chromium built,
// under artifactDir, and checks them. Chromium is found as
// $TWNSBENCH_CHROMIUM, else chromium, chromium-browser or google-chrome on
// PATH; scripts/install-test-deps.sh installs Debian's.

// browserWindow is the viewport: wide enough for the charts, tall enough
// that the key results chart is on the screenshot.
const browserWidth, browserHeight = 1100, 2400

func chromiumBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	if p := os.Getenv("TWNSBENCH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("SKIP: no Chromium (chromium, chromium-browser, google-chrome) on PATH and TWNSBENCH_CHROMIUM unset: " +
		"the HTML report is not checked in a browser; install it with scripts/install-test-deps.sh")
	return ""
}

// artifactDir is where a test keeps what it produced for a person to
// look at: $TWNSBENCH_TEST_ARTIFACTS, else /tmp/twnsbench-test-artifacts,
// then the test's name. It is emptied first, and left in place.
func artifactDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("TWNSBENCH_TEST_ARTIFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "twnsbench-test-artifacts")
	}
	dir := filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browserRun is what one Chromium load produced.
type browserRun struct {
	dom     []byte
	console []string // console messages the page logged
	shot    image.Image
}

// consoleLine is how Chromium's --enable-logging=stderr prints a page's
// console message (every level: the page has no script, so any is wrong).
var consoleLine = regexp.MustCompile(`:CONSOLE[:(]`)

// loadInChromium loads page with Chromium, writes its screenshot to shot
// and returns the DOM, the console messages and the decoded screenshot.
func loadInChromium(t *testing.T, bin, page, shot string, dark bool) browserRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{
		"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(),
		// Any fetch beyond the file itself fails: a page that needed one
		// would show the gap.
		"--host-resolver-rules=MAP * ~NOTFOUND",
		"--enable-logging=stderr", "--v=0",
		"--window-size=" + strconv.Itoa(browserWidth) + "," + strconv.Itoa(browserHeight),
		"--screenshot=" + shot, "--dump-dom",
	}
	if dark {
		args = append(args, "--force-dark-mode")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	// Chromium starts helpers: its own process group, killed whole by PID
	// when the deadline passes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, lastLines(stderr.String(), 20))
	}
	var r browserRun
	r.dom = stdout.Bytes()
	for _, l := range strings.Split(stderr.String(), "\n") {
		if consoleLine.MatchString(l) {
			r.console = append(r.console, l)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, lastLines(stderr.String(), 20))
	}
	defer f.Close()
	if r.shot, err = png.Decode(f); err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	return r
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}

// shotFacts are what a screenshot shows: its size, how much of it is not
// the background (the top-left pixel), how many colours it has, and
// whether it holds a given colour exactly (a chart's bar).
type shotFacts struct {
	w, h    int
	bg      color.RGBA
	inked   float64 // fraction of pixels differing from bg
	colours int
}

func factsOfShot(img image.Image) shotFacts {
	b := img.Bounds()
	f := shotFacts{w: b.Dx(), h: b.Dy(), bg: rgba(img.At(b.Min.X, b.Min.Y))}
	seen := map[color.RGBA]bool{}
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := rgba(img.At(x, y))
			seen[c] = true
			if c != f.bg {
				inked++
			}
		}
	}
	f.inked = float64(inked) / float64(f.w*f.h)
	f.colours = len(seen)
	return f
}

func rgba(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

// hasColour reports whether img holds a block of at least 3×3 pixels of
// exactly hex: a bar drawn in that colour, not an anti-aliased edge.
func hasColour(img image.Image, hex string) bool {
	want := parseHex(hex)
	b := img.Bounds()
	for y := b.Min.Y + 1; y < b.Max.Y-1; y++ {
		for x := b.Min.X + 1; x < b.Max.X-1; x++ {
			if rgba(img.At(x, y)) != want {
				continue
			}
			block := true
			for dy := -1; dy <= 1 && block; dy++ {
				for dx := -1; dx <= 1; dx++ {
					if rgba(img.At(x+dx, y+dy)) != want {
						block = false
						break
					}
				}
			}
			if block {
				return true
			}
		}
	}
	return false
}

func parseHex(s string) color.RGBA {
	var v [3]uint8
	for i := range v {
		hi, lo := unhex(s[1+2*i]), unhex(s[2+2*i])
		v[i] = hi<<4 | lo
	}
	return color.RGBA{v[0], v[1], v[2], 0xff}
}

func unhex(c byte) uint8 {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// The "done when": the page of a run renders in headless Chromium
// with every table and chart, in light and in dark, without a console
// message; the screenshots stay under the artifact directory.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromiumBinary(t)
	for _, c := range []struct {
		name string
		doc  func(t *testing.T) *results.Document
	}{
		{"series", func(*testing.T) *results.Document { return seriesDoc() }},
		{"reference", referenceDoc},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := c.doc(t)
			dir := artifactDir(t)
			page := filepath.Join(dir, HTMLFile)
			if err := os.WriteFile(page, HTML(d), 0o644); err != nil {
				t.Fatal(err)
			}
			facts := factsOf(d)
			for _, theme := range []struct {
				name       string
				dark       bool
				bg, accent string // the page's background; the first transport's bar
			}{
				{"light", false, svg.Palettes[Light].BG, svg.Palettes[Light].Transports[0]},
				{"dark", true, svg.Palettes[Dark].BG, svg.Palettes[Dark].Transports[0]},
			} {
				shot := filepath.Join(dir, "screenshot-"+theme.name+".png")
				r := loadInChromium(t, bin, page, shot, theme.dark)
				t.Logf("%s: screenshot %s", theme.name, shot)
				if err := os.WriteFile(filepath.Join(dir, "dom-"+theme.name+".html"), r.dom, 0o644); err != nil {
					t.Fatal(err)
				}
				if len(r.console) > 0 {
					t.Errorf("%s: console messages:\n%s", theme.name, strings.Join(r.console, "\n"))
				}
				// The DOM Chromium built holds every table and chart.
				checkPage(t, r.dom, facts)
				f := factsOfShot(r.shot)
				if f.w != browserWidth || f.h != browserHeight {
					t.Errorf("%s: screenshot %d×%d, want %d×%d", theme.name, f.w, f.h, browserWidth, browserHeight)
				}
				if f.bg != parseHex(theme.bg) {
					t.Errorf("%s: background %v, want %s", theme.name, f.bg, theme.bg)
				}
				if f.inked < 0.05 || f.colours < 50 {
					t.Errorf("%s: screenshot looks blank: %.1f %% of pixels drawn, %d colours", theme.name, 100*f.inked, f.colours)
				}
				if !hasColour(r.shot, theme.accent) {
					t.Errorf("%s: no bar in %s on the screenshot: the charts were not drawn in this theme", theme.name, theme.accent)
				}
				t.Logf("%s: %.1f %% of pixels drawn, %d colours, bars in %s present", theme.name, 100*f.inked, f.colours, theme.accent)
			}
		})
	}
}

// The checks above can fail: a page that logs to the console, fetches an
// image and draws nothing is caught by each of them.
func TestChromiumChecksCatchABadPage(t *testing.T) {
	bin := chromiumBinary(t)
	dir := artifactDir(t)
	page := filepath.Join(dir, "bad.html")
	bad := `<!DOCTYPE html><html><body><img src="http://example.invalid/x.png"><script>console.error("broken")</script></body></html>`
	if err := os.WriteFile(page, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r := loadInChromium(t, bin, page, filepath.Join(dir, "screenshot.png"), false)
	if len(r.console) != 1 || !strings.Contains(r.console[0], "broken") {
		t.Errorf("console messages %q, want the one the page logged", r.console)
	}
	if f := factsOfShot(r.shot); f.inked > 0.01 {
		t.Errorf("a blank page counted as %.1f %% drawn", 100*f.inked)
	}
	if hasColour(r.shot, svg.Palettes[Light].Transports[0]) {
		t.Error("a page without charts has their colour")
	}
	if problems := pageProblems(r.dom, factsOf(seriesDoc())); len(problems) == 0 {
		t.Error("the DOM of a page without tables or charts passed the page checks")
	} else {
		t.Logf("the page checks found, as they should: %s", strings.Join(problems, "; "))
	}
}
