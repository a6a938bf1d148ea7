package report

import (
	"bytes"
	"testing"

	"github.com/twnsbench/twnsbench/internal/hostile"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The report shows what a results file names as text: a transport's
// label, a version, a host, a condition's label and a reason.
func TestMarkdownShowsNamesFromDataAsText(t *testing.T) {
	d := twnsbenchDoc()
	for i := range d.Transports {
		d.Transports[i].Label = hostile.Names[i%len(hostile.Names)] + " " + hostile.Text
		d.Transports[i].About = hostile.Text
	}
	d.Conditions[0].Label = hostile.Text
	d.Env.Facts = append(d.Env.Facts, results.Fact{Key: "evil", Label: hostile.Text, Value: hostile.Text})
	d.Env.Kernel = hostile.Text
	d.Env.ScpOptions = "-c x` " + hostile.Text
	d.Complete, d.Incomplete = false, hostile.Text
	d.Env.Hosts = []results.Host{{Roles: []string{"server"}, Login: hostile.Text, Kernel: hostile.Text, NIC: results.NIC{Iface: hostile.Text}}}
	md := Markdown(d)
	hostile.CheckMarkdown(t, "the Markdown report", md)
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
	env.Tools = map[string]string{"iperf3": hostile.Text}
	env.Hosts = []string{hostile.Text}
	for day := 1; day <= 3; day++ {
		l := historyLine(env, day, "iperf3-1", "value", "Gbit/s", results.BetterHigher, 2.5)
		l.Transport, l.ConditionLabel, l.Settings = hostile.Text, hostile.Text, hostile.Text
		h.Lines = append(h.Lines, l)
	}
	hostile.CheckMarkdown(t, "the history report", History(h, ""))
}
