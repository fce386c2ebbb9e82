package templates

import (
	"html"
	"strings"
	"testing"
	"text/template"

	"github.com/yuin/goldmark"
)

func TestQuote(t *testing.T) {
	quote := funcs["quote"].(func(string) string)
	tests := []struct {
		name, in, want string
	}{
		{"one line", "Please add rate limiting.", "> Please add rate limiting."},
		{"several lines", "First line\nsecond line", "> First line\n> second line"},
		{"trailing newlines dropped", "Body\n\n\n", "> Body"},
		{"blank line inside stays in the quote", "One\n\nTwo", "> One\n> \n> Two"},
		{"quote inside a quote", "> earlier\nreply", "> > earlier\n> reply"},
		{"HTML stays text of the quote", "<details>\nx", "> <details>\n> x"},
		{"empty", "", "> "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := quote(tc.in); got != tc.want {
				t.Errorf("quote(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestOneline(t *testing.T) {
	oneline := funcs["oneline"].(func(string) string)
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Add a test", "Add a test"},
		{"newlines joined", "The limiter\nkeys on\r\nthe address", "The limiter keys on the address"},
		{"runs of space collapsed", "  a \t\t b  ", "a b"},
		{"pipe escaped for tables", "a | b", `a \| b`},
		{"every pipe escaped", "|x|", `\|x\|`},
		{"empty", "", ""},
		{"only space", " \n\t", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := oneline(tc.in); got != tc.want {
				t.Errorf("oneline(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestFuncsInTemplates checks the funcs as templates call them, with the
// pipeline syntax the text files use.
func TestFuncsInTemplates(t *testing.T) {
	tests := []struct {
		src  string
		data any
		want string
	}{
		{`{{quote .}}`, "a\nb", "> a\n> b"},
		{`| {{oneline .}} |`, "x |\ny", `| x \| y |`},
		{`{{join . ", "}}`, []string{"a", "b"}, "a, b"},
		{`{{add . 1}}`, 2, "3"},
		{`{{lower .}} {{upper .}}`, "Mixed", "mixed MIXED"},
		{`| {{cell .}} |`, "a | b\n[c](https://d) *e*", `| a \| b \[c\](https\://d) \*e\* |`},
		{`["{{mermaid .}}"]`, "say \"hi\"]\n%% x", `["say #34;hi#34;#93; #37;#37; x"]`},
		{`{{mermaidID .}}`, "phase-12", "n_phase_12"},
	}
	for _, tc := range tests {
		tmpl := template.Must(template.New("").Funcs(funcs).Parse(tc.src))
		var b strings.Builder
		if err := tmpl.Execute(&b, tc.data); err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if b.String() != tc.want {
			t.Errorf("%s with %q = %q, want %q", tc.src, tc.data, b.String(), tc.want)
		}
	}
}

// TestCode: a file name an agent chose shows as one code span holding
// exactly that name, whatever it holds: goldmark (CommonMark) renders
// "- " + code(name) as one list item whose one child is <code> with the
// name, its control and format characters shown as U+FFFD.
func TestCode(t *testing.T) {
	code := funcs["code"].(func(string) string)
	md := goldmark.New()
	for _, tc := range []struct{ name, in, shown string }{
		{"plain", "src/main.go", "src/main.go"},
		{"backticks inside", "a`b``c", "a`b``c"},
		{"backtick first and last", "`x`", "`x`"},
		{"spaces at the ends", " x ", " x "},
		{"a space first", " x", " x"},
		{"markup", "<img src=x onerror=alert(1)> *em* [l](https://e.example) @octocat :smile:", "<img src=x onerror=alert(1)> *em* [l](https://e.example) @octocat :smile:"},
		{"a newline and a heading", "a\n\n# b", "a\ufffd\ufffd# b"},
		{"bidi override", "x\u202egp.exe", "x\ufffdgp.exe"},
		{"a marker", "<!-- forge:plan-001:wrote:x -->", "<!-- forge:plan-001:wrote:x -->"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := code(tc.in)
			if strings.ContainsAny(out, "\n\r") {
				t.Fatalf("code(%q) = %q spans lines", tc.in, out)
			}
			var b strings.Builder
			if err := md.Convert([]byte("- "+out+"\n"), &b); err != nil {
				t.Fatal(err)
			}
			want := "<ul>\n<li><code>" + html.EscapeString(tc.shown) + "</code></li>\n</ul>\n"
			if got := strings.ReplaceAll(b.String(), "&quot;", "&#34;"); got != strings.ReplaceAll(want, "&quot;", "&#34;") {
				t.Errorf("code(%q) = %q renders\n%s\nwant\n%s", tc.in, out, b.String(), want)
			}
		})
	}
}
