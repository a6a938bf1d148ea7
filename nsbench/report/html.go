package report

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// HTML renders d as one self-contained page: the Markdown report's every
// block (converted, so each table and sentence exists once, in the
// Markdown writer), every chart inline in both themes with the one of the
// reader's colour scheme shown, a summary of the warnings, and a table of
// contents. It needs nothing but itself: no script, no stylesheet, no
// image or font is fetched. Like Markdown, it is deterministic.
func HTML(d *results.Document) []byte {
	if d == nil {
		return nil
	}
	v := newView(d)
	// The page's own sections take their ids first.
	ids := map[string]int{"contents": 1, "warnings": 1, "charts": 1}
	links := mdConvert([]string{v.figureLinks()}).html
	// The charts are inline below; the Markdown's pointers to their files
	// are not needed here.
	p := pageOf(string(Markdown(d)), ids, func(b mdBlock) bool { return b.image != "" || b.html == links })
	p.Warnings = v.warnings(ids)
	for _, f := range figures {
		if f.optional && !f.has(v) {
			continue
		}
		fd := pageFigure{ID: uniqueID(ids, f.id), Title: f.title, File: f.file, DarkFile: f.darkFile}
		if f.has(v) {
			fd.Light = template.HTML(f.draw(v, Light, fd.ID+"-light-"))
			fd.Dark = template.HTML(f.draw(v, Dark, fd.ID+"-dark-"))
		} else {
			fd.Absent = f.absent
		}
		p.Figures = append(p.Figures, fd)
	}
	return renderPage(p)
}

// pageOf is the page of the Markdown md: its title, the blocks before the
// first section as the header, a section per level-2 heading and the
// contents, every id taken from ids; skip leaves a block out.
func pageOf(md string, ids map[string]int, skip func(mdBlock) bool) pageData {
	p := pageData{CSS: template.CSS(pageCSS)}
	var sec *pageSection
	for _, b := range mdBlocks(md) {
		switch {
		case b.level == 1:
			p.Title = b.text
			continue
		case skip(b):
			continue
		case b.level == 2:
			p.Sections = append(p.Sections, pageSection{ID: uniqueID(ids, b.text)})
			sec = &p.Sections[len(p.Sections)-1]
			p.TOC = append(p.TOC, tocEntry{ID: sec.ID, Text: b.text})
			sec.Heading = template.HTML(b.html)
			continue
		case b.level == 3 && sec != nil:
			id := uniqueID(ids, b.text)
			toc := &p.TOC[len(p.TOC)-1]
			toc.Sub = append(toc.Sub, tocEntry{ID: id, Text: b.text})
			sec.Body += template.HTML(fmt.Sprintf("<h3 id=\"%s\">%s</h3>\n", id, b.html))
			continue
		}
		if sec == nil {
			p.Header += template.HTML(b.html + "\n")
		} else {
			sec.Body += template.HTML(b.html + "\n")
		}
	}
	return p
}

// renderPage executes the page's template.
func renderPage(p pageData) []byte {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		// The template is fixed and its data plain strings: a failure is
		// a bug in this file, shown in the page rather than hidden.
		return []byte("<!DOCTYPE html><title>report</title><p>report: render HTML: " + template.HTMLEscapeString(err.Error()))
	}
	return buf.Bytes()
}

type pageData struct {
	Title    string
	CSS      template.CSS
	Header   template.HTML
	TOC      []tocEntry
	Warnings []pageWarning
	Figures  []pageFigure
	Sections []pageSection
}

type tocEntry struct {
	ID, Text string
	Sub      []tocEntry
}

type pageSection struct {
	ID      string
	Heading template.HTML
	Body    template.HTML
}

type pageFigure struct {
	ID, Title, File, DarkFile string
	Light, Dark               template.HTML
	Absent                    string
}

// pageWarning is one thing to read before the numbers, and the section
// that details it ("" when none does).
type pageWarning struct{ Text, Link string }

// warnings gathers what qualifies the numbers: an incomplete run, cells
// whose condition did not verify, skips, failures, fallbacks and the
// cells' statistical warnings, each once.
func (v *view) warnings(ids map[string]int) []pageWarning {
	d := v.doc
	link := func(heading string) string {
		if _, ok := ids[slug(heading)]; ok {
			return "#" + slug(heading)
		}
		return ""
	}
	var ws []pageWarning
	if !d.IsComplete() {
		ws = append(ws, pageWarning{Text: "Incomplete run: " + d.IncompleteReason() + "."})
	}
	unverified := 0
	for _, r := range d.Verification {
		if !r.OK {
			unverified++
		}
	}
	if unverified > 0 {
		ws = append(ws, pageWarning{fmt.Sprintf("%d of %d impaired cells did not verify their condition (rows marked %s).",
			unverified, len(d.Verification), flagMark), link("Verification")})
	}
	if n := len(d.Skipped); n > 0 {
		ws = append(ws, pageWarning{plural(n, "skip record", "skip records") + ": a transport, condition or instrument that could not run.", link("Skipped")})
	}
	if n := len(d.Failures); n > 0 {
		ws = append(ws, pageWarning{plural(n, "sample", "samples") + " failed; their cells hold the other runs.", link("Failed samples")})
	}
	if n := excludedCount(d); n > 0 {
		ws = append(ws, pageWarning{plural(n, "sample", "samples") + " kept out of cells and verdicts (not converged).", link("Samples kept out")})
	}
	if n := belowRateCount(d); n > 0 {
		ws = append(ws, pageWarning{plural(n, "fixed-rate sample", "fixed-rate samples") + " fell short of the rate offered: no cost reading at that rate.", link("Below the offered rate")})
	}
	for _, f := range d.Env.Fallbacks {
		ws = append(ws, pageWarning{"Fallback used: " + f + ".", link("Environment")})
	}
	if cells, marked, _ := noiseCounts(d); marked > 0 {
		ws = append(ws, pageWarning{fmt.Sprintf("%d of %d cells marked %s: their runs met other work on the host, spread widely, missed the precision asked for, or hold lower bounds that leave it unknown.",
			marked, cells, noiseMark), link("Noise")})
	}
	seen := map[string]int{}
	var order []string
	for _, c := range d.Cells {
		if c.Warning == "" {
			continue
		}
		if seen[c.Warning] == 0 {
			order = append(order, c.Warning)
		}
		seen[c.Warning]++
	}
	for _, w := range order {
		ws = append(ws, pageWarning{Text: plural(seen[w], "cell", "cells") + ": " + w + "."})
	}
	return ws
}

// uniqueID is text's slug, suffixed -2, -3… when already taken.
func uniqueID(taken map[string]int, text string) string {
	id := slug(text)
	taken[id]++
	if n := taken[id]; n > 1 {
		id = fmt.Sprintf("%s-%d", id, n)
		taken[id]++
	}
	return id
}

// slug keeps lower-case letters and digits, one '-' for any run of others.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	if b.Len() == 0 {
		return "section"
	}
	return b.String()
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{.Header}}</header>
<nav class="toc" aria-labelledby="contents">
<h2 id="contents">Contents</h2>
<ol>
{{- if .Warnings}}
<li><a href="#warnings">Warnings</a></li>
{{- end}}
<li><a href="#charts">Charts</a>
<ol>
{{- range .Figures}}
<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{- end}}
</ol></li>
{{- range .TOC}}
<li><a href="#{{.ID}}">{{.Text}}</a>
{{- if .Sub}}
<ol>
{{- range .Sub}}
<li><a href="#{{.ID}}">{{.Text}}</a></li>
{{- end}}
</ol>
{{- end}}</li>
{{- end}}
</ol>
</nav>
{{- if .Warnings}}
<section id="warnings">
<h2>Warnings</h2>
<ul class="warnings">
{{- range .Warnings}}
<li>{{.Text}}{{if .Link}} <a href="{{.Link}}">details</a>{{end}}</li>
{{- end}}
</ul>
</section>
{{- end}}
<section id="charts">
<h2>Charts</h2>
{{- range .Figures}}
<figure id="{{.ID}}">
<figcaption>{{.Title}}{{if not .Absent}} <span class="files">({{.File}}, {{.DarkFile}})</span>{{end}}</figcaption>
{{- if .Absent}}
<p class="absent">{{.Absent}}</p>
{{- else}}
<div class="chart theme-light">
{{.Light}}</div>
<div class="chart theme-dark">
{{.Dark}}</div>
{{- end}}
</figure>
{{- end}}
</section>
{{- range .Sections}}
<section id="{{.ID}}">
<h2>{{.Heading}}</h2>
{{.Body}}</section>
{{- end}}
</main>
</body>
</html>
`))

// pageCSS follows the charts' palettes: GitHub's light and dark colours.
const pageCSS = `
:root { --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --border: #d1d9e0; --panel: #f6f8fa; --link: #0969da; --warn: #9a6700; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --border: #3d444d; --panel: #151b23; --link: #4493f8; --warn: #d29922; }
}
html { background: var(--bg); color: var(--fg); }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; }
main { max-width: 1000px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.8em; margin: 0 0 .4em; }
h2 { font-size: 1.35em; border-bottom: 1px solid var(--border); padding-bottom: .2em; margin-top: 1.8em; }
h3 { font-size: 1.1em; margin-top: 1.4em; }
a { color: var(--link); }
code, pre { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, monospace; font-size: .9em; }
code { background: var(--panel); padding: .1em .3em; border-radius: 4px; }
pre { background: var(--panel); border: 1px solid var(--border); padding: 10px; overflow-x: auto; border-radius: 6px; }
pre code { background: none; padding: 0; }
.table { overflow-x: auto; margin: 1em 0; }
table { border-collapse: collapse; font-size: .9em; }
th, td { border: 1px solid var(--border); padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: var(--panel); }
tbody tr:nth-child(even) { background: var(--panel); }
nav.toc { background: var(--panel); border: 1px solid var(--border); border-radius: 6px; padding: 4px 16px 8px; }
nav.toc h2 { border: 0; margin: .5em 0 .2em; font-size: 1.1em; }
nav.toc ol { margin: 0; padding-left: 1.4em; }
ul.warnings li { color: var(--warn); }
ul.warnings li a { color: var(--link); }
figure { margin: 1.2em 0; }
figcaption { font-weight: 600; margin-bottom: .4em; }
figcaption .files, .absent { color: var(--muted); font-weight: normal; }
.chart svg { max-width: 100%; height: auto; display: block; }
.theme-dark { display: none; }
@media (prefers-color-scheme: dark) {
  .theme-light { display: none; }
  .theme-dark { display: block; }
}
`
