package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link of README.md and docs/*.md: its
// file exists, and a #anchor names a heading of that file as GitHub spells
// it. The README links pages under docs/; a page renamed or a
// heading reworded must not leave a link behind.
func TestDocLinks(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../../README.md"}, pages...)
	if len(pages) < 2 {
		t.Fatalf("no pages under docs/: %v", pages)
	}
	links := 0
	for _, p := range pages {
		n, broken := checkLinks(p)
		links += n
		for _, b := range broken {
			t.Error(b)
		}
	}
	if links < 20 {
		t.Errorf("%d relative links found in %d pages: the link pattern no longer matches", links, len(pages))
	}
}

// TestDocLinksCatchBrokenOnes proves the check fails: a missing file, a
// missing heading and a link into a missing file's heading are each
// reported; links to a file, a heading elsewhere, a heading of the same
// page, a duplicate heading's second anchor and an external URL are not,
// nor a link inside code.
func TestDocLinksCatchBrokenOnes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("other.md", "# Other\n\n## wireguard-go's memory\n\n## A history across runs (`--history`)\n\n## Notes\n\n## Notes\n")
	write("page.md", "# Page\n\n## Up here\n\n"+
		"[ok](other.md) [ok](other.md#wireguard-gos-memory) [ok](other.md#a-history-across-runs---history) "+
		"[ok](#up-here) [ok](other.md#notes-1) [ok](https://example.com/x#y) ![ok](other.md)\n"+
		"`[code](nowhere.md)`\n\n```\n[fence](nowhere.md)\n```\n"+
		"[bad](missing.md) [bad](other.md#no-such-heading) [bad](#nor-here) [bad](gone.md#x)\n")
	_, broken := checkLinks(filepath.Join(dir, "page.md"))
	want := []string{"missing.md", "other.md#no-such-heading", "#nor-here", "gone.md#x"}
	if len(broken) != len(want) {
		t.Fatalf("broken links reported: %q, want one each for %q", broken, want)
	}
	for i, w := range want {
		if !strings.Contains(broken[i], "("+w+")") {
			t.Errorf("report %d is %q, want it to name (%s)", i, broken[i], w)
		}
	}
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*(\S+)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// checkLinks returns how many relative links page holds and a line for each
// broken one.
func checkLinks(page string) (int, []string) {
	text, err := os.ReadFile(page)
	if err != nil {
		return 0, []string{err.Error()}
	}
	n := 0
	var broken []string
	for i, line := range proseLines(string(text)) {
		if line == "" {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if scheme.MatchString(target) {
				continue
			}
			n++
			if why := checkLink(page, target); why != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: (%s): %s", page, i+1, target, why))
			}
		}
	}
	return n, broken
}

// checkLink says why target, a relative link in page, is broken, or "".
func checkLink(page, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(file, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !headingAnchors(string(text))[anchor] {
		return fmt.Sprintf("no heading with anchor #%s in %s", anchor, filepath.Base(file))
	}
	return ""
}

// proseLines returns text's lines with those inside fenced code blocks
// blanked, so line numbers stay the file's.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives text's headings:
// lower-case, punctuation but '-' and '_' removed, spaces to '-', and a
// repeated anchor suffixed -1, -2, ….
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		title, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if !ok || !strings.HasPrefix(l, "#") || len(l)-len(strings.TrimLeft(l, "#")) > 6 {
			continue
		}
		a := anchorOf(title)
		if k := seen[a]; k > 0 {
			anchors[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func anchorOf(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
