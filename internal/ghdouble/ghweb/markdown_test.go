package ghweb

import (
	"strings"
	"testing"
)

// TestMarkdown: references to issues link as GitHub links them, outside
// code and links; raw HTML and script links never reach the page.
func TestMarkdown(t *testing.T) {
	cases := []struct {
		in        string
		want, not []string
	}{
		{"Plan pull request: #3", []string{`Plan pull request: <a href="/acme/greeter/issues/3">#3</a>`}, nil},
		{"Closes #12.\nSee (#4), #5", []string{`<a href="/acme/greeter/issues/12">#12</a>.`, `(<a href="/acme/greeter/issues/4">#4</a>)`, `<a href="/acme/greeter/issues/5">#5</a>`}, nil},
		{"`#3` and foo#4 and &#5; and #0 and [#6](https://example.com)", []string{"<code>#3</code>", "foo#4"},
			[]string{"issues/3", "issues/4", "issues/5", "issues/0", "issues/6"}},
		{"```\n#7\n```", []string{"#7"}, []string{"issues/7"}},
		{"<script>alert(1)</script> <b onclick=x>b</b> [x](javascript:alert(2)) ![i](javascript:alert(3))",
			nil, []string{"<script", "onclick", "javascript:"}},
	}
	for _, c := range cases {
		got := string(markdown("acme/greeter", c.in))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q renders\n%s\nwithout %q", c.in, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%q renders\n%s\nwith %q", c.in, got, n)
			}
		}
	}
	if got := string(markdown("", "#3")); strings.Contains(got, "href") {
		t.Errorf("a text of no repository links #3: %s", got)
	}
}
