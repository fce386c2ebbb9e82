// Package templates holds every text Forge shows people: plan files,
// comments, reviews, check-run output and the setup pages. Texts are
// embedded in the binary and rendered here, nowhere else.
package templates

import (
	"bytes"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"io"
	"io/fs"
	"strings"
)

//go:embed web/*.html web/static
var webFS embed.FS

var web = htmltemplate.Must(htmltemplate.New("").Funcs(htmltemplate.FuncMap{"lower": strings.ToLower}).ParseFS(webFS, "web/*.html"))

// RenderPage writes an HTML page (web/<name>.html) with data.
func RenderPage(w io.Writer, name string, data any) error {
	return renderWeb(w, name+".html", data)
}

// RenderFragment writes the part of a page a template defines with
// {{define name}}: what a page's live updates replace.
func RenderFragment(w io.Writer, name string, data any) error {
	return renderWeb(w, name, data)
}

func renderWeb(w io.Writer, name string, data any) error {
	var buf bytes.Buffer
	if err := web.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("render page %s: %w", name, err)
	}
	_, err := buf.WriteTo(w)
	return err
}

// Static holds the pages' style sheet and script (web/static), served
// as files so that the pages' Content-Security-Policy allows no inline
// code.
func Static() fs.FS {
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil {
		panic(err) // the directory is embedded
	}
	return sub
}
