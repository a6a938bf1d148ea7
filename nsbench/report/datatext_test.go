package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// hostile is what a crafted results file, history line or host may name
// a transport, label, version or host: a terminal title escape, GitHub
// Actions workflow commands (one after a line break), HTML and a link.
var hostile = []string{
	"\x1b]0;pwned\x07",
	"::error title=x::y",
	"ok\n::warning::z",
	"<img src=x onerror=alert(1)>",
	"[click](javascript:alert(1))",
}

var hostileText = strings.Join(hostile, " ")

// liveLink is a Markdown link or image not preceded by a backslash
// escape: "[text](target)".
var liveLink = regexp.MustCompile(`(^|[^\\])\[[^\]]*[^\\]?\]\(`)

// checkMarkdownSafe fails when md, which took the hostile names, holds raw
// HTML from them, a live link, a raw control character, or a line a CI
// runner would read as a workflow command.
func checkMarkdownSafe(t *testing.T, what string, md []byte) {
	t.Helper()
	s := string(md)
	for _, bad := range []string{"<img", "\x1b", "\x07", "[click](javascript"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s holds a raw %q", what, bad)
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "::") {
			t.Errorf("%s has a line that starts a workflow command: %q", what, l)
		}
		if strings.Contains(l, "click") && liveLink.MatchString(l) {
			t.Errorf("%s has a live link from data: %q", what, l)
		}
	}
	if !strings.Contains(s, `&lt;img src=x onerror=alert(1)&gt;`) || !strings.Contains(s, `\[click\](javascript:alert(1))`) {
		t.Errorf("%s does not show the names as text", what)
	}
}

// The report shows what a results file names as text: a transport's
// label, a version, a host, a condition's label and a reason.
func TestMarkdownShowsNamesFromDataAsText(t *testing.T) {
	d := twnsbenchDoc()
	for i := range d.Transports {
		d.Transports[i].Label = hostile[i%len(hostile)] + " " + hostileText
		d.Transports[i].About = hostileText
	}
	d.Conditions[0].Label = hostileText
	d.Env.Facts = append(d.Env.Facts, results.Fact{Key: "evil", Label: hostileText, Value: hostileText})
	d.Env.Kernel = hostileText
	d.Env.ScpOptions = "-c x` " + hostileText
	d.Complete, d.Incomplete = false, hostileText
	d.Env.Hosts = []results.Host{{Roles: []string{"server"}, Login: hostileText, Kernel: hostileText, NIC: results.NIC{Iface: hostileText}}}
	md := Markdown(d)
	checkMarkdownSafe(t, "the Markdown report", md)
	page := HTML(d)
	for _, bad := range []string{"<img", "javascript:alert(1)\""} {
		if bytes.Contains(bytes.ToLower(page), []byte(bad)) {
			t.Errorf("the HTML page holds %q", bad)
		}
	}
}

// The history report takes the same rule (the A/B step summary: ci's
// TestStepSummaryShowsNamesAsText).
func TestHistoryShowsNamesAsText(t *testing.T) {
	var h results.History
	env := hereEnv
	env.Tools = map[string]string{"iperf3": hostileText}
	env.Hosts = []string{hostileText}
	for day := 1; day <= 3; day++ {
		l := historyLine(env, day, "iperf3-1", "value", "Gbit/s", results.BetterHigher, 2.5)
		l.Transport, l.ConditionLabel, l.Settings = hostileText, hostileText, hostileText
		h.Lines = append(h.Lines, l)
	}
	checkMarkdownSafe(t, "the history report", History(h, ""))
}
