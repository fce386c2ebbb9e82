package audit

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/forge-dev/forge/pipeline/markdown"
)

// preflightSection is a section every plan must have, with the heading
// texts that count as it ("## Tests" is as good as "## Testing").
type preflightSection struct {
	name string
	re   *regexp.Regexp
}

var preflightRequired = []preflightSection{
	{"Objective", regexp.MustCompile(`^objectives?\b`)},
	{"Scope", regexp.MustCompile(`^scope\b`)},
	{"Changes", regexp.MustCompile(`^changes?\b`)},
	{"Risks", regexp.MustCompile(`^risks?\b`)},
	{"Testing", regexp.MustCompile(`^test(?:s|ing)?\b`)},
}

var (
	// Sections Forge and the implementer write into; text there quotes
	// auditors and code and is not the plan's to fill.
	preflightSkipRe = regexp.MustCompile(`^(?:audit log|implementation notes|decisions)\b`)

	preflightTokenRe = regexp.MustCompile(`\{\{[^{}\n]*\}\}`)
	preflightWordRe  = regexp.MustCompile(`\b(?:TODO|TBD|FIXME)\b`)
	// preflightAngleRe is a "<describe the change>" prompt: words in angle
	// brackets, with a space, and none of an HTML tag's = / " characters.
	preflightAngleRe    = regexp.MustCompile(`<([A-Za-z][^<>=/"\n]*\s[^<>=/"\n]*)>`)
	preflightEllipsisRe = regexp.MustCompile(`^(?:[-*+]\s*)?(?:\.\.\.|…|\[\.\.\.\]|\[…\])$`)
	preflightCodeSpanRe = regexp.MustCompile("`+[^`\n]*`+")

	// preflightNewRe marks a path as one the plan creates, on its own line
	// or in the sub-heading above it ("### New files").
	preflightNewRe = regexp.MustCompile(`(?i)\(new\)|\[new\]|\bnew:|\bnew\s+(?:files?|modules?|packages?|tests?|directory|directories|folders?|scripts?|templates?)\b|\bcreat(?:e|es|ed|ing|ion)\b|\badd(?:s|ed|ing)?\s+(?:an?\s+)?new\b|\b(?:renam|mov)(?:e|es|ed|ing)\b`)
	// preflightAddRe is a line that opens with "Add `path`": adding a file.
	preflightAddRe = regexp.MustCompile("(?i)^\\s*(?:[-*+]|\\d{1,3}[.)])?\\s*(?:\\*\\*|__)?add(?:s|ed)?(?:\\*\\*|__)?\\s*:?\\s*`")
)

// preflightHTMLTags are tags whose attributes can look like a prompt
// ("<details open>").
var preflightHTMLTags = map[string]bool{
	"a": true, "b": true, "i": true, "p": true, "br": true, "hr": true, "div": true, "span": true, "img": true,
	"details": true, "summary": true, "sub": true, "sup": true, "kbd": true, "code": true, "pre": true,
	"table": true, "tr": true, "td": true, "th": true, "ul": true, "ol": true, "li": true, "em": true,
	"strong": true, "picture": true, "source": true, "video": true, "input": true,
}

// Preflight is the structural check run before the AI auditor (DESIGN §3
// step 3, seed 000 `!plan audit`). It reports:
//   - a required section (Objective, Scope, Changes, Risks, Testing) that
//     is missing: blocking (the seed's "high");
//   - a required section that is empty: medium;
//   - text left from the template: {{TOKENS}}, the words TODO, TBD and
//     FIXME, "<describe …>" prompts in angle brackets, and lines that are
//     only "…": medium, one finding per line; code spans, code blocks, HTML
//     comments and the Audit Log and Implementation Notes sections are not
//     read;
//   - a backticked path under Changes (see LooksLikePath) that
//     leaves the repository, or that does not exist (exists reports false)
//     and is not marked new on its line or sub-heading ("(new)", "new
//     file", "create", "rename", "move", a line opening with "Add `…`"):
//     medium;
//   - a Changes section that names no file at all: minor, since the phases
//     are built from those paths.
//
// exists may be nil, which skips the existence check. Missing sections
// come first, then the rest in plan order.
func Preflight(plan string, exists func(path string) bool) []Finding {
	lines := markdown.Scan(plan)
	sections := markdown.Sections(lines)

	var missing, found []Finding
	var changes *markdown.Section
	for _, req := range preflightRequired {
		sec, ok := markdown.Find(sections, req.re.MatchString)
		if !ok {
			missing = append(missing, Finding{
				Severity:       SeverityBlocking,
				Description:    fmt.Sprintf("Missing required section: ## %s", req.name),
				Recommendation: fmt.Sprintf("Add a ## %s section.", req.name),
			})
			continue
		}
		if preflightEmpty(lines[sec.Heading+1 : sec.End]) {
			found = append(found, Finding{
				Severity:       SeverityMedium,
				Description:    fmt.Sprintf("Section ## %s is empty", req.name),
				Recommendation: fmt.Sprintf("Fill in ## %s.", req.name),
				PlanLine:       lines[sec.Heading].Number,
			})
			continue
		}
		if req.name == "Changes" {
			changes = &sec
		}
	}

	found = append(found, preflightPlaceholders(lines, func(i int) bool {
		for j := len(sections) - 1; j >= 0; j-- {
			if s := sections[j]; s.Heading <= i && i < s.End && preflightSkipRe.MatchString(s.Folded()) {
				return true
			}
		}
		return false
	})...)

	if changes != nil {
		found = append(found, preflightPaths(lines[changes.Heading+1:changes.End], exists)...)
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].PlanLine < found[j].PlanLine })
	return append(missing, found...)
}

// PreflightBlocks reports whether the pre-flight found something at
// least medium: then the round reports it without calling the auditor.
func PreflightBlocks(findings []Finding) bool {
	for _, f := range findings {
		if f.Severity >= SeverityMedium {
			return true
		}
	}
	return false
}

// preflightEmpty reports whether a section holds nothing but blank lines,
// HTML comments and sub-headings.
func preflightEmpty(body []markdown.Line) bool {
	for _, l := range body {
		if l.Code {
			return false
		}
		v := strings.TrimSpace(l.Visible)
		if _, _, heading := l.Heading(); v != "" && !heading {
			return false
		}
	}
	return true
}

func preflightPlaceholders(lines []markdown.Line, skip func(i int) bool) []Finding {
	var out []Finding
	for i, l := range lines {
		if l.Code || skip(i) {
			continue
		}
		text := preflightCodeSpanRe.ReplaceAllString(l.Visible, "")
		token := preflightTokenRe.FindString(text)
		if token == "" {
			token = preflightWordRe.FindString(text)
		}
		if token == "" {
			for _, m := range preflightAngleRe.FindAllStringSubmatch(text, -1) {
				if first := strings.ToLower(strings.Fields(m[1])[0]); !preflightHTMLTags[first] {
					token = m[0]
					break
				}
			}
		}
		if token == "" && preflightEllipsisRe.MatchString(strings.TrimSpace(text)) {
			token = strings.TrimSpace(text)
		}
		if token == "" {
			continue
		}
		out = append(out, Finding{
			Severity:       SeverityMedium,
			Description:    fmt.Sprintf("Placeholder text `%s` left in the plan", strings.ReplaceAll(token, "`", "'")),
			Recommendation: "Replace the placeholder with the plan's own text.",
			PlanLine:       l.Number,
		})
	}
	return out
}

// preflightPaths checks the backticked paths of the Changes section.
func preflightPaths(body []markdown.Line, exists func(string) bool) []Finding {
	var out []Finding
	seen := map[string]bool{}
	subheading := ""
	for _, l := range body {
		if l.Code {
			continue
		}
		if _, title, ok := l.Heading(); ok {
			subheading = title
		}
		isNew := preflightNewRe.MatchString(l.Visible) || preflightNewRe.MatchString(subheading) || preflightAddRe.MatchString(l.Visible)
		for _, span := range markdown.CodeSpans(l.Visible) {
			p, _, _ := SplitLocation(strings.TrimSpace(span))
			if !LooksLikePath(p) {
				continue
			}
			if !SafePath(p) {
				if !seen[p] {
					seen[p] = true
					out = append(out, Finding{
						Severity:       SeverityMedium,
						Description:    fmt.Sprintf("`%s` under ## Changes is outside the repository", p),
						Recommendation: "Use a path relative to the repository root.",
						PlanLine:       l.Number,
					})
				}
				continue
			}
			clean := path.Clean(p)
			if seen[clean] {
				continue
			}
			seen[clean] = true
			if isNew || exists == nil || exists(clean) {
				continue
			}
			out = append(out, Finding{
				Severity:       SeverityMedium,
				Description:    fmt.Sprintf("`%s` under ## Changes does not exist and is not marked new", clean),
				Recommendation: "Fix the path, or mark the file as new, e.g. `(new)`.",
				PlanLine:       l.Number,
			})
		}
	}
	if len(seen) == 0 {
		line := 0
		if len(body) > 0 {
			line = body[0].Number - 1 // the heading
		}
		out = append(out, Finding{
			Severity:       SeverityMinor,
			Description:    "## Changes names no file in backticks",
			Recommendation: "List each file the plan changes, e.g. - `path/to/file.go` — what changes.",
			PlanLine:       line,
		})
	}
	return out
}

// IsChanges reports whether a heading (folded, see markdown.Fold) is the
// plan's Changes section, the one the phases are built from.
func IsChanges(folded string) bool {
	for _, sec := range preflightRequired {
		if sec.name == "Changes" {
			return sec.re.MatchString(folded)
		}
	}
	return false
}

// IsForgeSection reports whether a heading (folded) is a section Forge or
// the implementer writes into (Audit Log, Implementation Notes, Decisions:
// the notes people gave with their decisions): it is not the plan's text
// to check or to hash.
func IsForgeSection(folded string) bool { return preflightSkipRe.MatchString(folded) }
