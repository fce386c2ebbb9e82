package ghweb

import (
	"bytes"
	"html/template"
	"regexp"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Every text shown here may be hostile (an issue, a comment, an agent's
// plan): goldmark is left without WithUnsafe, so raw HTML in it is dropped
// and links to javascript:, vbscript:, file: and data: (but images) lose
// their target; the pages' Content-Security-Policy refuses inline scripts
// besides.
var (
	refs = parser.WithASTTransformers(util.Prioritized(issueRefs{}, 999))
	// comments render as GitHub renders comments: a line break is a break.
	comments = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(refs),
		goldmark.WithRendererOptions(html.WithHardWraps()))
	// markdownFiles render as GitHub renders a Markdown file.
	markdownFiles = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(refs))
)

// markdown renders a comment, a pull request body or a check run's output
// of the repository repo ("owner/name").
func markdown(repo, text string) template.HTML { return render(comments, repo, text) }

// markdownFile renders a Markdown file of the repository repo.
func markdownFile(repo, text string) template.HTML { return render(markdownFiles, repo, text) }

// repoKey tells issueRefs the repository a text belongs to.
var repoKey = parser.NewContextKey()

func render(md goldmark.Markdown, repo, src string) template.HTML {
	var b bytes.Buffer
	pc := parser.NewContext()
	pc.Set(repoKey, repo)
	if err := md.Convert([]byte(src), &b, parser.WithContext(pc)); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(b.String()) //nolint:gosec // goldmark without WithUnsafe escapes what it is given
}

// issueRef is a reference to an issue or pull request, "#12", as GitHub
// links it: not inside a word, nor followed by one.
var issueRef = regexp.MustCompile(`(^|[^\w&/#])#([1-9][0-9]{0,8})\b`)

// issueRefs links "#12" in text to the repository's issue (or pull
// request) 12, as GitHub does; code and links are left alone.
type issueRefs struct{}

func (issueRefs) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	repo, _ := pc.Get(repoKey).(string)
	if repo == "" {
		return
	}
	src := reader.Source()
	var texts []*ast.Text
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link, *ast.AutoLink, *ast.Image, *ast.CodeSpan, *ast.CodeBlock, *ast.FencedCodeBlock, *ast.HTMLBlock, *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			texts = append(texts, n)
		}
		return ast.WalkContinue, nil
	})
	for _, t := range texts {
		seg := t.Segment
		value := seg.Value(src)
		found := issueRef.FindAllSubmatchIndex(value, -1)
		if len(found) == 0 || t.IsRaw() || seg.Padding != 0 {
			continue
		}
		parent := t.Parent()
		at := 0
		for _, m := range found {
			start, stop := m[4]-1, m[5] // the "#" and the number
			if start > at {
				parent.InsertBefore(parent, t, ast.NewTextSegment(text.NewSegment(seg.Start+at, seg.Start+start)))
			}
			link := ast.NewLink()
			link.Destination = []byte("/" + repo + "/issues/" + string(value[m[4]:m[5]]))
			link.AppendChild(link, ast.NewTextSegment(text.NewSegment(seg.Start+start, seg.Start+stop)))
			parent.InsertBefore(parent, t, link)
			at = stop
		}
		rest := ast.NewTextSegment(text.NewSegment(seg.Start+at, seg.Stop))
		rest.SetSoftLineBreak(t.SoftLineBreak())
		rest.SetHardLineBreak(t.HardLineBreak())
		parent.ReplaceChild(parent, t, rest)
	}
}
