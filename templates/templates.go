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
)

//go:embed web/*.html
var webFS embed.FS

var web = htmltemplate.Must(htmltemplate.ParseFS(webFS, "web/*.html"))

// RenderPage writes an HTML page (web/<name>.html) with data.
func RenderPage(w io.Writer, name string, data any) error {
	var buf bytes.Buffer
	if err := web.ExecuteTemplate(&buf, name+".html", data); err != nil {
		return fmt.Errorf("render page %s: %w", name, err)
	}
	_, err := buf.WriteTo(w)
	return err
}
