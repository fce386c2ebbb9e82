package configdoc

import (
	"fmt"
	"strings"
)

// Markdown renders keys as one part per top-level section, and one per
// run of top-level keys without keys of their own: a heading, the
// section's meaning, then a table of its keys with their
// type, default, environment variable (env, by path; the column is left
// out when env is nil) and meaning.
func Markdown(keys []Key, heading string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(keys); {
		top := keys[i]
		j := i + 1
		var rows []Key
		if top.Section {
			for j < len(keys) && within(keys[j].Path, top.Path) {
				j++
			}
			fmt.Fprintf(&b, "%s `%s`\n\n%s\n\n", heading, top.Path, top.Doc)
			rows = keys[i+1 : j]
		} else {
			// Top-level keys with no keys of their own share a table.
			for j < len(keys) && !keys[j].Section {
				j++
			}
			rows = keys[i:j]
			names := make([]string, len(rows))
			for n, k := range rows {
				names[n] = "`" + k.Path + "`"
			}
			fmt.Fprintf(&b, "%s %s\n\n", heading, strings.Join(names, ", "))
		}
		b.WriteString("| key | type | default |")
		if env != nil {
			b.WriteString(" environment |")
		}
		b.WriteString(" meaning |\n|---|---|---|")
		if env != nil {
			b.WriteString("---|")
		}
		b.WriteString("---|\n")
		for _, k := range rows {
			def := "none"
			if k.Default != "" {
				def = k.Default
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |", k.Path, k.Type, cell(def))
			if env != nil {
				e := ""
				if v := env[k.Path]; v != "" {
					e = "`" + v + "`"
				}
				fmt.Fprintf(&b, " %s |", e)
			}
			fmt.Fprintf(&b, " %s |\n", cell(k.Doc))
		}
		b.WriteString("\n")
		i = j
	}
	return b.String()
}

// within reports whether path is a key below top.
func within(path, top string) bool {
	return strings.HasPrefix(path, top+".") || strings.HasPrefix(path, top+"[]")
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}
