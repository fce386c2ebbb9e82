package ghdouble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
// parameter of the wrong type, 400 for a body that is not JSON, 422 otherwise.
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
			status, e = http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
		}
	}
	return status, e
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
