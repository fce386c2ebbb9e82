package stall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Bounds of a diagnosis's answer (GitHub allows a check run 3 buttons).
const (
	MinOptions   = 2
	MaxOptions   = 3
	MaxCause     = 1000
	MaxChange    = 4000
	MaxTradeoffs = 1000
	MaxChecks    = 10
	MaxCheck     = 200
)

// Option is one way on that a diagnosis offers a person: the Change (the
// phase's new change spec once chosen), its Tradeoffs and the Checks it
// affects.
type Option struct {
	Change    string   `json:"change"`
	Tradeoffs string   `json:"tradeoffs"`
	Checks    []string `json:"checks"`
}

// Diagnosis is the diagnosis agent's answer: the Cause it found and 2 to
// 3 Options.
type Diagnosis struct {
	Cause   string   `json:"cause"`
	Options []Option `json:"options"`
}

// ParseDiagnosis reads the diagnosis agent's answer strictly: exactly one
// JSON object {"cause", "options": [{"change", "tradeoffs", "checks"}]}
// with no other field, 2 to 3 options, each change and trade-off given,
// every text within its bound. Anything else is refused, never guessed.
func ParseDiagnosis(answer string) (Diagnosis, error) {
	var d Diagnosis
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(answer)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Diagnosis{}, fmt.Errorf("the diagnosis is not the JSON object asked for: %w", err)
	}
	if rest, _ := readRest(dec); len(bytes.TrimSpace(rest)) > 0 {
		return Diagnosis{}, errors.New("the diagnosis has text after its JSON object")
	}
	var errs []error
	if strings.TrimSpace(d.Cause) == "" || len(d.Cause) > MaxCause {
		errs = append(errs, fmt.Errorf("cause: empty or longer than %d bytes", MaxCause))
	}
	if len(d.Options) < MinOptions || len(d.Options) > MaxOptions {
		errs = append(errs, fmt.Errorf("%d options, want %d to %d", len(d.Options), MinOptions, MaxOptions))
	}
	for i, o := range d.Options {
		if strings.TrimSpace(o.Change) == "" || len(o.Change) > MaxChange {
			errs = append(errs, fmt.Errorf("option %d: change empty or longer than %d bytes", i+1, MaxChange))
		}
		if strings.TrimSpace(o.Tradeoffs) == "" || len(o.Tradeoffs) > MaxTradeoffs {
			errs = append(errs, fmt.Errorf("option %d: tradeoffs empty or longer than %d bytes", i+1, MaxTradeoffs))
		}
		if len(o.Checks) > MaxChecks {
			errs = append(errs, fmt.Errorf("option %d: more than %d checks", i+1, MaxChecks))
		}
		for _, c := range o.Checks {
			if strings.TrimSpace(c) == "" || len(c) > MaxCheck {
				errs = append(errs, fmt.Errorf("option %d: a check empty or longer than %d bytes", i+1, MaxCheck))
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Diagnosis{}, err
	}
	return d, nil
}

func readRest(dec *json.Decoder) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(dec.Buffered())
	return b.Bytes(), err
}
