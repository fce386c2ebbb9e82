package forge

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// userDocs are the files that speak to Forge's users: they must stand
// alone, so a reader who has only the repository can follow every link.
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "SECURITY.md"}
	if _, err := os.Stat("CHANGELOG.md"); err == nil {
		files = append(files, "CHANGELOG.md")
	}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(files, more...)
}

// TestDocsStandAlone keeps the product's documents free of references to
// what a user does not have: the developers' design notes and the
// documents Forge was made from.
func TestDocsStandAlone(t *testing.T) {
	outside := []*regexp.Regexp{
		regexp.MustCompile(`\.\./shared`),
		regexp.MustCompile(`\bDESIGN\b`),
		regexp.MustCompile(`(?i)\bseeds?\b\s*(?:\d|'s)`),
		regexp.MustCompile(`§`),
	}
	for _, f := range userDocs(t) {
		text := read(t, f)
		for i, line := range strings.Split(text, "\n") {
			for _, re := range outside {
				if m := re.FindString(line); m != "" {
					t.Errorf("%s:%d refers to what a user does not have (%q): %s", f, i+1, m, line)
				}
			}
		}
	}
}

// TestReadmeIsAQuickStart holds the README to a quick start a newcomer
// finishes, with every document under docs/ a link away.
func TestReadmeIsAQuickStart(t *testing.T) {
	text := read(t, "README.md")
	if n := len(strings.Fields(text)); n >= 1500 {
		t.Errorf("README.md has %d words; keep it a quick start under 1,500 and move the rest to docs/", n)
	}
	for _, want := range []string{"## Quick start", "### Prerequisites", "server.public_url", "forge doctor", "make demo"} {
		if !strings.Contains(text, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	docs, _ := filepath.Glob("docs/*.md")
	index := read(t, "docs/README.md")
	for _, d := range docs {
		if d == filepath.Join("docs", "README.md") {
			continue
		}
		if !strings.Contains(text, "]("+filepath.ToSlash(d)) {
			t.Errorf("README.md does not link %s", d)
		}
		if !strings.Contains(index, "]("+filepath.Base(d)) {
			t.Errorf("docs/README.md, the table of contents, does not list %s", d)
		}
	}
	for _, img := range regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(img[1], "demo-") {
			t.Errorf("README.md shows %s: show the playground's realistic plan, not a test's fixture", img[1])
		}
	}
}

// TestDocLinksResolve follows every relative link of the user documents:
// the file must exist and an anchor must name one of its headings, as
// GitHub makes them.
func TestDocLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range userDocs(t) {
		text := stripCode(read(t, f))
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links %s: %v", f, target, err)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if !headingAnchors(read(t, file))[frag] {
				t.Errorf("%s links %s: %s has no heading with the anchor #%s", f, target, file, frag)
			}
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stripCode drops fenced code blocks, whose brackets are not links.
func stripCode(text string) string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// headingAnchors are the anchors GitHub gives a document's headings:
// lower case, punctuation dropped, spaces made hyphens, a repeated one
// numbered from -1.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(stripCode(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}
