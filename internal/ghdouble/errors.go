package ghdouble

import (
	"net/http"
	"strconv"
)

// Error is an error answer in GitHub's shape:
// {"message": "...", "documentation_url": "...", "status": "422", "errors": [...]}.
type Error struct {
	Message          string       `json:"message"`
	Errors           []FieldError `json:"errors,omitempty"`
	DocumentationURL string       `json:"documentation_url"`
	Status           string       `json:"status"`
}

// FieldError is one entry of a 422's "errors" array.
type FieldError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
	// Value is the value refused, as GitHub names a bad query parameter's.
	Value any `json:"value,omitempty"`
}

const docsRoot = "https://docs.github.com/rest"

// fillError completes an error answer: the status as GitHub repeats it in the body,
// and the documentation link of the operation (its externalDocs in the OpenAPI
// description), as GitHub gives.
func (s *Server) fillError(c *Call, status int, e *Error) *Error {
	out := *e
	out.Status = strconv.Itoa(status)
	if out.DocumentationURL == "" {
		out.DocumentationURL = docsRoot
		if c != nil && c.Route.op.Operation.ExternalDocs != nil {
			out.DocumentationURL = c.Route.op.Operation.ExternalDocs.URL
		}
	}
	return &out
}

func notFound() (int, any) {
	return http.StatusNotFound, &Error{Message: "Not Found"}
}

func unauthorized(msg string) (int, any) {
	return http.StatusUnauthorized, &Error{Message: msg}
}

func forbidden(msg string) (int, any) {
	return http.StatusForbidden, &Error{Message: msg}
}

// unprocessable is a 422 with a message only, as GitHub gives for a refused action.
func unprocessable(msg string) (int, any) {
	return http.StatusUnprocessableEntity, &Error{Message: msg}
}

// validationFailed is GitHub's 422 "Validation Failed" with its errors array.
func validationFailed(errs ...FieldError) (int, any) {
	return http.StatusUnprocessableEntity, &Error{Message: "Validation Failed", Errors: errs}
}
