package ghweb

import (
	"bytes"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// Every text shown here may be hostile (an issue, a comment, an agent's
// plan): goldmark is left without WithUnsafe, so raw HTML in it is dropped
// and links to javascript:, vbscript:, file: and data: (but images) lose
// their target; the pages' Content-Security-Policy refuses inline scripts
// besides.
var (
	// comments render as GitHub renders comments: a line break is a break.
	comments = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithHardWraps()))
	// files render as GitHub renders a Markdown file.
	markdownFiles = goldmark.New(goldmark.WithExtensions(extension.GFM))
)

// markdown renders a comment, a pull request body or a check run's output.
func markdown(text string) template.HTML { return render(comments, text) }

// markdownFile renders a Markdown file of the repository.
func markdownFile(text string) template.HTML { return render(markdownFiles, text) }

func render(md goldmark.Markdown, text string) template.HTML {
	var b bytes.Buffer
	if err := md.Convert([]byte(text), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(text) + "</pre>")
	}
	return template.HTML(b.String()) //nolint:gosec // goldmark without WithUnsafe escapes what it is given
}
