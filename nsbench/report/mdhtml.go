package report

import (
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
)

// mdhtml.go turns the report's own Markdown into HTML, so that the HTML
// page shows the same tables and sentences as bench-report.md without a
// second copy of them. It reads only what Markdown() writes: headings,
// paragraphs, pipe tables, "- " lists, fenced code and images, with
// **bold**, `code` and [links](…) inline. It is not a general Markdown
// parser.

// mdBlock is one block of the Markdown, converted.
type mdBlock struct {
	level int    // 1–3 for a heading, 0 otherwise
	text  string // a heading's plain text
	image string // an image block's target
	html  string
}

// mdBlocks splits md into blocks at blank lines (a fence keeps its blank
// lines) and converts each.
func mdBlocks(md string) []mdBlock {
	lines := strings.Split(strings.TrimRight(md, "\n"), "\n")
	var blocks []mdBlock
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, mdConvert(cur))
			cur = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if f := fenceOf(l); f != "" && len(cur) == 0 {
			j := i + 1
			for j < len(lines) && lines[j] != f {
				j++
			}
			body := strings.Join(lines[i+1:min(j, len(lines))], "\n")
			blocks = append(blocks, mdBlock{html: "<pre><code>" + html.EscapeString(body) + "</code></pre>"})
			i = j
			continue
		}
		if l == "" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return blocks
}

// fenceOf returns l when it opens a code fence (three or more backticks).
func fenceOf(l string) string {
	if len(l) >= 3 && strings.Trim(l, "`") == "" {
		return l
	}
	return ""
}

var mdImage = regexp.MustCompile(`^!\[([^\]]*)\]\(([^)\s]+)\)$`)

func mdConvert(lines []string) mdBlock {
	first := lines[0]
	for level := 3; level >= 1; level-- {
		if p := strings.Repeat("#", level) + " "; len(lines) == 1 && strings.HasPrefix(first, p) {
			text := strings.TrimPrefix(first, p)
			return mdBlock{level: level, text: text, html: inline(text)}
		}
	}
	if m := mdImage.FindStringSubmatch(first); len(lines) == 1 && m != nil && safeTarget(m[2]) {
		return mdBlock{image: m[2], html: fmt.Sprintf(`<img src="%s" alt="%s">`, html.EscapeString(m[2]), html.EscapeString(m[1]))}
	}
	if all(lines, func(l string) bool { return strings.HasPrefix(l, "|") }) {
		return mdBlock{html: mdTable(lines)}
	}
	if all(lines, func(l string) bool { return strings.HasPrefix(l, "- ") }) {
		var b strings.Builder
		b.WriteString("<ul>\n")
		for _, l := range lines {
			b.WriteString("<li>" + inline(strings.TrimPrefix(l, "- ")) + "</li>\n")
		}
		b.WriteString("</ul>")
		return mdBlock{html: b.String()}
	}
	return mdBlock{html: "<p>" + inline(strings.Join(lines, "\n")) + "</p>"}
}

func all(xs []string, f func(string) bool) bool {
	for _, x := range xs {
		if !f(x) {
			return false
		}
	}
	return true
}

// mdTable converts a pipe table: its header row, the separator row, then
// the body; tableRow's "\|" escapes are undone in the cells.
func mdTable(lines []string) string {
	var b strings.Builder
	b.WriteString("<div class=\"table\"><table>\n")
	for i, l := range lines {
		if i == 1 && strings.Trim(l, "|-: ") == "" {
			continue
		}
		tag := "td"
		if i == 0 {
			tag = "th"
			b.WriteString("<thead>")
		} else if i == 2 {
			b.WriteString("<tbody>")
		}
		b.WriteString("<tr>")
		for _, c := range splitRow(l) {
			b.WriteString("<" + tag + ">" + inline(c) + "</" + tag + ">")
		}
		b.WriteString("</tr>")
		if i == 0 {
			b.WriteString("</thead>")
		}
		b.WriteString("\n")
	}
	if len(lines) > 2 {
		b.WriteString("</tbody>")
	}
	b.WriteString("</table></div>")
	return b.String()
}

// splitRow splits "| a | b\|c |" into "a", "b|c"; other backslash
// escapes stay for inline.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	if strings.HasSuffix(l, "|") && !strings.HasSuffix(l, `\|`) {
		l = l[:len(l)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l) && l[i+1] == '|':
			cur.WriteByte('|')
			i++
		case l[i] == '\\' && i+1 < len(l): // another escape: inline's
			cur.WriteString(l[i : i+2])
			i++
		case l[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(l[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var (
	mdBold = regexp.MustCompile(`\*\*(.+?)\*\*`)
	mdLink = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
)

// inline escapes s and converts `code` spans, **bold** and [links](…).
// Code spans are cut out first, so their contents stay literal. Outside
// them, mdText's escapes are undone: a backslash-escaped character is
// that character, never markup, and an entity is its character.
func inline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] != '`' {
			if s[j] == '\\' && j+1 < len(s) {
				j++
			}
			j++
		}
		b.WriteString(inlineText(s[i:j]))
		if j == len(s) {
			break
		}
		k := strings.IndexByte(s[j+1:], '`')
		if k < 0 { // an unmatched backtick is literal text
			b.WriteString(inlineText(s[j:]))
			break
		}
		b.WriteString("<code>" + html.EscapeString(s[j+1:j+1+k]) + "</code>")
		i = j + 1 + k + 1
	}
	return b.String()
}

// inlineText converts text outside code spans. Escaped characters wait
// as NULs (text never holds one: textsafe.Quote writes it as \x00) until
// the bold and link patterns have run.
func inlineText(s string) string {
	var lit []string
	var raw strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(asciiPunct, s[i+1]) >= 0 {
			lit = append(lit, s[i+1:i+2])
			raw.WriteByte(0)
			i++
			continue
		}
		raw.WriteByte(s[i])
	}
	t := html.EscapeString(html.UnescapeString(raw.String()))
	t = mdBold.ReplaceAllString(t, "<strong>$1</strong>")
	t = mdLink.ReplaceAllStringFunc(t, func(link string) string {
		m := mdLink.FindStringSubmatch(link)
		if !safeTarget(html.UnescapeString(m[2])) {
			return link // shown as the text it is
		}
		return `<a href="` + m[2] + `">` + m[1] + `</a>`
	})
	for _, l := range lit {
		t = strings.Replace(t, "\x00", html.EscapeString(l), 1)
	}
	return t
}

// asciiPunct are the characters a backslash escapes in CommonMark.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// safeTarget reports whether a link's target may become an href or a src:
// only http(s) and relative ones. Host facts and results files from
// elsewhere reach the page, and a javascript: or data: target there would
// run in the reader's browser.
func safeTarget(target string) bool {
	u, err := url.Parse(target) // refuses control characters; lower-cases the scheme
	return err == nil && (u.Scheme == "" || u.Scheme == "http" || u.Scheme == "https")
}
