package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// profileDoc is a run of two builds with one profile comparison: f's
// share grew from 20 to 60 % of the samples, g's fell from 80 to 40 %.
func profileDoc() *results.Document {
	d, lo, hi := 40.0, 35.5, 44.25
	neg := -40.0
	return &results.Document{
		Transports: []results.Transport{
			{Name: "wireguard-go@a", Build: &results.Build{Label: "a", Programs: []results.BuildProgram{{Option: "wireguard-go", Path: "/a", SHA256: "aa"}}}},
			{Name: "wireguard-go@b", Build: &results.Build{Label: "b", Programs: []results.BuildProgram{{Option: "wireguard-go", Path: "/b", SHA256: "bb"}}}},
		},
		Verdicts: &results.Verdicts{Order: "ABBA", MinEffect: 0.05, FailOn: []string{"*/*/value"}, CPUProfile: &results.CPUProfile{
			Method: "perf test",
			Comparisons: []results.ProfileDiff{{Transport: "wireguard-go", Condition: "lan", Rounds: 6,
				A: results.ProfileSide{Row: "wireguard-go@a", Samples: 1000, Folded: "profile-wireguard-go-lan-A.folded"},
				B: results.ProfileSide{Row: "wireguard-go@b", Samples: 1000, Folded: "profile-wireguard-go-lan-B.folded"},
				Functions: []results.FunctionChange{
					{Name: "f|pipe", SelfA: 20, SelfB: 60, Self: results.ShareChange{Delta: &d, Lo: &lo, Hi: &hi}, InclA: 20, InclB: 60, Incl: results.ShareChange{Delta: &d}},
					{Name: "g", SelfA: 80, SelfB: 40, Self: results.ShareChange{Delta: &neg}, InclA: 80, InclB: 40},
				},
				Flame: &results.FlameNode{Name: "all", A: 1000, B: 1000, Children: []*results.FlameNode{
					{Name: "wireguard-go", A: 1000, B: 1000, Children: []*results.FlameNode{
						{Name: "f|pipe", A: 200, B: 600}, {Name: "g", A: 800, B: 400}}}}},
			}},
		}},
	}
}

// TestProfileSection: the section names the method and the files, and
// lists each function's shares and change with its interval, a dash where
// none was computed (never 0).
func TestProfileSection(t *testing.T) {
	md := string(Markdown(profileDoc()))
	for _, want := range []string{
		"## Where the time went",
		"perf test",
		"### wireguard-go · lan",
		"wireguard-go@a: 1000 samples; wireguard-go@b: 1000 samples; 6 rounds",
		"[profile-wireguard-go-lan-A.folded](profile-wireguard-go-lan-A.folded)",
		"| `f\\|pipe` | 20.0 % | 60.0 % | +40.0 pp | +35.5 to +44.2 | 20.0 % | 60.0 % | +40.0 pp | — |",
		"| `g` | 80.0 % | 40.0 % | -40.0 pp | — | 80.0 % | 40.0 % | — | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	d := profileDoc()
	d.Verdicts.CPUProfile = nil
	if strings.Contains(string(Markdown(d)), "Where the time went") {
		t.Error("a run without --profile has the profile section")
	}
}

// TestProfileChart: the flame graph draws B's widths (f 60 %, g 40 % of
// the panel) coloured by the change of share: f in full red, g in full
// blue, the unchanged root and process neutral; the HTML page holds it
// inline, and a document without profile has no such figure.
func TestProfileChart(t *testing.T) {
	d := profileDoc()
	img := string(profileChart(newView(d), Light, ""))
	rect := func(name string) (width, fill string) {
		re := regexp.MustCompile(`<title>` + regexp.QuoteMeta(name) + ` — [^<]*</title><rect x="[^"]+" y="[^"]+" width="([^"]+)" height="[^"]+" fill="([^"]+)"`)
		m := re.FindStringSubmatch(img)
		if m == nil {
			t.Fatalf("no frame %q in\n%s", name, img)
		}
		return m[1], m[2]
	}
	full := chartWidth - 2*chartMargin
	for _, tc := range []struct {
		name, width, fill string
	}{
		{"all", svg.N1(full), "#eeeeee"},
		{"wireguard-go", svg.N1(full), "#eeeeee"},
		{"f|pipe", svg.N1(full * 0.6), "#d73027"},
		{"g", svg.N1(full * 0.4), "#3182bd"},
	} {
		if w, f := rect(tc.name); w != tc.width || f != tc.fill {
			t.Errorf("%s: width %s fill %s, want %s %s", tc.name, w, f, tc.width, tc.fill)
		}
	}
	if !strings.Contains(img, "f|pipe — B 60.0 %, A 20.0 %, B − A +40.0 pp") {
		t.Error("the frame's tooltip lacks its shares and change")
	}
	if !strings.Contains(string(HTML(d)), `id="chart-profile"`) {
		t.Error("the HTML page lacks the flame graph")
	}
	// A file's tree with holes draws what it has.
	d.Verdicts.CPUProfile.Comparisons[0].Flame.Children = append(d.Verdicts.CPUProfile.Comparisons[0].Flame.Children, nil)
	if !strings.Contains(string(profileChart(newView(d), Dark, "")), "</svg>") {
		t.Error("a tree with a null frame was not drawn")
	}
	d.Verdicts.CPUProfile = nil
	if strings.Contains(string(HTML(d)), "chart-profile") {
		t.Error("a run without --profile has a flame graph")
	}
	for _, f := range Files(d) {
		if f.Name == ProfileFile && f.Body != nil {
			t.Error("a run without --profile writes a flame graph file")
		}
	}
}
