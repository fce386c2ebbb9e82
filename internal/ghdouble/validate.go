package ghdouble

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	forge "github.com/forge-dev/forge"
)

var (
	specOnce sync.Once
	specDoc  *openapi3.T
	specErr  error
)

// specPath is the trimmed OpenAPI description internal/trimspec writes,
// which the binary embeds (forge.GitHubDescription).
const specPath = "testdata/openapi/api.github.com.json"

// loadSpec reads the description once per binary: the document is only read
// afterwards, so every Server shares it.
func loadSpec() (*openapi3.T, error) {
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		specDoc, specErr = loader.LoadFromData(forge.GitHubDescription)
		if specErr != nil {
			specErr = fmt.Errorf("load GitHub's OpenAPI description: %w", specErr)
		}
	})
	return specDoc, specErr
}

var validationOptions = func() *openapi3filter.Options {
	o := &openapi3filter.Options{
		MultiError:         true,
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	}
	// kin-openapi's default message dumps the whole schema; the path and the
	// reason are what a failing test needs.
	o.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		return fmt.Sprintf("at /%s: %s", strings.Join(err.JSONPointer(), "/"), err.Reason)
	})
	return o
}()

func (c *Call) validationInput() *openapi3filter.RequestValidationInput {
	return &openapi3filter.RequestValidationInput{
		Request:    c.Request,
		PathParams: c.Params,
		Route:      c.Route.op,
		Options:    validationOptions,
	}
}

// validateRequest checks the request against GitHub's OpenAPI description. A
// violation fails the test, and the answer is what GitHub gives: 404 for a path
// parameter of the wrong type, 400 for a body that is not JSON, 422 otherwise,
// worded as GitHub words it where known (githubRefusal).
func (s *Server) validateRequest(c *Call) (int, *Error) {
	// GitHub reads a JSON null body as no parameters; ghinstallation sends one.
	if string(bytes.TrimSpace(c.Body)) == "null" {
		c.Body = nil
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(c.Body))
	err := openapi3filter.ValidateRequest(context.Background(), c.validationInput())
	c.Request.Body = io.NopCloser(bytes.NewReader(c.Body))
	if err == nil {
		return 0, nil
	}
	reason := strings.ReplaceAll(err.Error(), "\n", " ")
	s.reportf("%s %s: GitHub would refuse this request: %s", c.Request.Method, c.Request.URL.Path, reason)
	status, e := http.StatusUnprocessableEntity, &Error{Message: "Invalid request.\n\n" + reason}
	worded := false
	for _, one := range unpack(err) {
		var re *openapi3filter.RequestError
		if !errors.As(one, &re) {
			continue
		}
		var pe *openapi3filter.ParseError
		switch {
		case re.Parameter != nil && re.Parameter.In == openapi3.ParameterInPath:
			return http.StatusNotFound, &Error{Message: "Not Found"}
		case re.RequestBody != nil && errors.As(re.Err, &pe):
			status, e, worded = http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}, true
		case !worded:
			if refusal := githubRefusal(c, re); refusal != nil {
				e, worded = refusal, true
			}
		}
	}
	return status, e
}

// githubRefusal is GitHub's 422 to a request error whose wording is
// known, nil for any other. An enumerated query parameter given a value
// outside its list is "Validation Failed" naming the parameter, its value
// and code invalid, as GitHub answers a listing's bad parameter (list
// issues' milestone: sigmavirus24/github3.py#406). A body field of the
// wrong type is GitHub's JSON-schema sentence, "Invalid request.\n\nFor
// 'properties/body', false is not a string." (magit/forge#748, create an
// issue; houndci/hound#1353, a review).
func githubRefusal(c *Call, re *openapi3filter.RequestError) *Error {
	for _, one := range unpack(re.Err) {
		var se *openapi3.SchemaError
		if !errors.As(one, &se) {
			continue
		}
		switch {
		case re.Parameter != nil && re.Parameter.In == openapi3.ParameterInQuery && se.SchemaField == "enum":
			return &Error{Message: "Validation Failed", Errors: []FieldError{{
				Resource: listResource(c), Field: re.Parameter.Name, Code: "invalid", Value: se.Value}}}
		case re.RequestBody != nil && se.SchemaField == "type" && se.Schema != nil:
			return &Error{Message: fmt.Sprintf("Invalid request.\n\nFor '%s', %s is not %s.",
				schemaPath(se.JSONPointer()), inspect(se.Value), typeWords(se.Schema))}
		}
	}
	return nil
}

// listResource is the resource GitHub names in a listing's refusal: its
// issues' and pull requests' ("" for another listing, where it is not
// known).
func listResource(c *Call) string {
	switch id := c.Route.op.Operation.OperationID; {
	case strings.HasPrefix(id, "issues/list"):
		return "Issue"
	case id == "pulls/list":
		return "PullRequest"
	}
	return ""
}

// schemaPath is where GitHub's JSON-schema refusal says the value is: the
// innermost property ("properties/body"), or "items" for an array's item.
func schemaPath(pointer []string) string {
	if len(pointer) == 0 {
		return "properties"
	}
	last := pointer[len(pointer)-1]
	if _, err := strconv.Atoi(last); err == nil {
		return "items"
	}
	return "properties/" + last
}

// inspect writes a JSON value as GitHub's refusals quote it (Ruby's
// inspect): null as nil, a string quoted, the rest as JSON.
func inspect(v any) string {
	if v == nil {
		return "nil"
	}
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// typeWords names the types a schema allows as GitHub's refusal does: "a
// string", "a string or null", "an object".
func typeWords(schema *openapi3.Schema) string {
	var types []string
	if schema.Type != nil {
		types = slices.Clone(schema.Type.Slice())
	}
	if schema.Nullable && !slices.Contains(types, "null") {
		types = append(types, "null")
	}
	if len(types) == 0 || types[0] == "null" {
		return strings.Join(types, " or ")
	}
	article := "a"
	if strings.ContainsRune("aeiou", rune(types[0][0])) {
		article = "an"
	}
	return article + " " + strings.Join(types, " or ")
}

func unpack(err error) []error {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		return me
	}
	return []error{err}
}

// validateResponse checks the double's own answer against the response schema of
// its status, so the double cannot drift from what go-github will meet on GitHub.
func (s *Server) validateResponse(c *Call, status int, header http.Header, body []byte) {
	err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: c.validationInput(),
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                validationOptions,
	})
	if err != nil {
		s.reportf("%s %s: the double's %d answer does not match GitHub's schema (a bug of the double): %s",
			c.Request.Method, c.Request.URL.Path, status, strings.ReplaceAll(err.Error(), "\n", " "))
	}
}
