package ghdouble

// WithoutCommitOnBranch serves a GitHub whose GraphQL schema has no
// createCommitOnBranch, as GitHub Enterprise Server before 3.3 (the
// mutation came to github.com on 2021-09-13 and to Enterprise Server in
// 3.3.0). GitHub refuses a document that asks for it in validation, before
// running anything: 200 with errors and no data, the undefined input type of
// its variable first, then the undefined field (see schemaErrors).
func WithoutCommitOnBranch() Option { return func(o *options) { o.noCommitOnBranch = true } }

// commitOnBranchTypes are the schema's types that came with
// createCommitOnBranch.
var commitOnBranchTypes = []string{"CreateCommitOnBranchInput", "CreateCommitOnBranchPayload", "CommittableBranch",
	"CommitMessage", "FileChanges", "FileAddition", "FileDeletion", "Base64String"}

// lacksField says whether this GitHub's schema has no such root field of
// kind ("query", "mutation"), which GitHub has elsewhere.
func (s *Server) lacksField(kind, name string) bool {
	return s.noCommitOnBranch && kind == "mutation" && name == "createCommitOnBranch"
}

// lacksType says whether this GitHub's schema has no such type.
func (s *Server) lacksType(name string) bool {
	if !s.noCommitOnBranch {
		return false
	}
	for _, t := range commitOnBranchTypes {
		if t == name {
			return true
		}
	}
	return false
}

// schemaErrors are GitHub's static validation errors of op (graphql-ruby's,
// as GitHub answers them): a variable of a type the schema lacks
// (variableRequiresValidType), then each root field it lacks or the double
// does not serve (undefinedField). Any of them and GitHub runs nothing.
func (s *Server) schemaErrors(op *gqlOperation, roots map[string]gqlRoot) []gqlError {
	opPath := op.kind
	if op.name != "" {
		opPath += " " + op.name
	}
	var errs []gqlError
	for _, v := range op.vars {
		if s.lacksType(v.typ) {
			errs = append(errs, gqlError{Path: []any{opPath},
				Extensions: map[string]any{"code": "variableRequiresValidType", "typeName": v.typ, "variableName": v.name},
				Locations:  []gqlLocation{v.at},
				Message:    v.typ + " isn't a defined input type (on $" + v.name + ")"})
		}
	}
	for _, f := range op.selections {
		if _, served := roots[f.name]; served && !s.lacksField(op.kind, f.name) {
			continue
		}
		typ := gqlRootType[op.kind]
		errs = append(errs, gqlError{Path: []any{opPath, cmpOr(f.alias, f.name)},
			Extensions: map[string]any{"code": "undefinedField", "typeName": typ, "fieldName": f.name},
			Locations:  []gqlLocation{f.at},
			Message:    "Field '" + f.name + "' doesn't exist on type '" + typ + "'"})
	}
	return errs
}
