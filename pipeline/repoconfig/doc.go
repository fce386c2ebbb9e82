// Package repoconfig owns a repository's .github/forge.yml (DESIGN §8) and
// the operator's policy over it: Config with its defaults, Parse, which
// collects every problem of a file with its line, the pipelines a
// repository defines (Pipeline, Step, its gates as Directive, and the
// built-in pipeline), Policy, which holds what
// a repository may set (the server configuration's `policy:`), and the
// order of GitHub's repository permissions the approval gate and the
// steering checks compare.
package repoconfig
