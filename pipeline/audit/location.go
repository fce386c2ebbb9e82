package audit

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

var verdictLocationRe = regexp.MustCompile(`(?i)^(.*?)(?::L?([0-9]+)(?:[-:]L?[0-9]+)?|#L([0-9]+)(?:-L?[0-9]+)?|(?:,\s*|\s+)\(?(?:lines?|l\.)\s*([0-9]+)(?:\s*[-–]\s*[0-9]+)?\)?)$`)

// ParseLocation reads a finding's location: "path", "path:12",
// "path:12-20" or "path:12:5" (the first number is the line), "path#L12",
// "path#L12-L20", and the prose forms "path, line 12" and "path (line 12)". Backticks around it are dropped and the path is cleaned.
// It refuses what could point outside the repository or confuse the GitHub
// API: empty, absolute or drive paths, ".." after cleaning, ".git",
// backslashes, colons left in the path, control characters, and line 0.
func ParseLocation(loc string) (string, int, bool) {
	p, line, ok := SplitLocation(loc)
	if !ok || !SafePath(p) {
		return "", 0, false
	}
	return path.Clean(p), line, true
}

// SplitLocation separates a location's path from its line; ok is false
// when the line is not a usable number.
func SplitLocation(loc string) (p string, line int, ok bool) {
	loc = strings.TrimSpace(strings.Trim(strings.TrimSpace(loc), "`"))
	m := verdictLocationRe.FindStringSubmatch(loc)
	if m == nil {
		return loc, 0, true
	}
	n, err := strconv.Atoi(m[2] + m[3] + m[4])
	if err != nil || n < 1 {
		return m[1], 0, false
	}
	return m[1], n, true
}

// SafePath reports whether p names something inside a repository.
func SafePath(p string) bool {
	if strings.TrimSpace(p) == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, `\:`) {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == unicode.ReplacementChar {
			return false
		}
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return false
	}
	return c != ".git" && !strings.HasPrefix(c, ".git/")
}

var pathCharsRe = regexp.MustCompile(`^[\w.\-/@+~]+$`)

// pathExtensions are the file extensions that make a backticked word a
// path: a short list of real ones keeps "fmt.Errorf" and "hash.Sum" from
// reading as files.
var pathExtensions = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`go mod sum work md markdown mdx txt rst adoc yml yaml json jsonc json5 toml ini cfg conf
		env properties xml html htm css scss sass less js mjs cjs jsx ts tsx mts cts vue svelte astro py pyi ipynb rb
		rs java kt kts scala groovy gradle c h cc cpp cxx hpp hh cs fs fsx swift m mm php pl pm lua r sql graphql gql
		proto sh bash zsh fish ps1 bat cmd tf tfvars hcl nix dockerfile tmpl tpl gotmpl j2 hbs mustache ex exs erl hrl
		clj cljs elm hs ml dart zig svg png jpg jpeg gif ico webp csv tsv lock snap golden patch diff pem crt
		feature spec plist gradle bzl bazel cmake mk`) {
		pathExtensions[e] = true
	}
}

// pathNames are file names without an extension that are still
// obviously files.
var pathNames = map[string]bool{
	"Makefile": true, "Dockerfile": true, "Containerfile": true, "Procfile": true, "Gemfile": true,
	"Rakefile": true, "Jenkinsfile": true, "Vagrantfile": true, "Justfile": true, "Taskfile": true,
	"LICENSE": true, "README": true, "CODEOWNERS": true, "NOTICE": true, "VERSION": true, "BUILD": true, "WORKSPACE": true,
	".gitignore": true, ".gitattributes": true, ".gitmodules": true, ".dockerignore": true, ".editorconfig": true,
	".env": true, ".envrc": true, ".npmrc": true, ".nvmrc": true, ".prettierrc": true, ".eslintrc": true,
	".babelrc": true, ".tool-versions": true, ".golangci": true,
}

// LooksLikePath reports whether a backticked word names a file:
// path characters only, and a known extension or file name.
func LooksLikePath(p string) bool {
	if p == "" || strings.HasPrefix(p, "-") || strings.Contains(p, "://") || !pathCharsRe.MatchString(p) {
		return false
	}
	base := path.Base(p)
	if pathNames[base] {
		return true
	}
	ext := path.Ext(base)
	if ext == "" || len(ext) == len(base) {
		return false // no extension, or ".go" alone: a kind of file, not a file
	}
	return pathExtensions[ext[1:]]
}
