package agents

import "github.com/forge-dev/forge/pipeline/agent"

// Price is what a model's tokens cost, per million, in the operator's
// currency (agents.prices in the server configuration).
type Price struct {
	InputPerMillion  float64 `yaml:"input_per_million" doc:"The price of a million input tokens, in the operator's currency."`
	OutputPerMillion float64 `yaml:"output_per_million" doc:"The price of a million output tokens."`
}

// Cost prices usage of a model; false when the model has no price.
func (r *Registry) Cost(model string, u agent.Usage) (float64, bool) {
	p, ok := r.prices[model]
	if !ok {
		return 0, false
	}
	return (float64(u.InputTokens)*p.InputPerMillion + float64(u.OutputTokens)*p.OutputPerMillion) / 1e6, true
}
