// Package grafana generates deploy/grafana/forge.json, a Grafana dashboard
// of the series Forge exports on /metrics (go generate ./deploy/grafana).
// Its test fails when the file is not what Dashboard renders, or when a
// panel asks for a series a running Forge does not export.
package grafana

//go:generate go run ./gen forge.json

import (
	"encoding/json"
	"fmt"
)

// Panel is one time series panel: its queries (PromQL) and their legends.
type Panel struct {
	Title   string
	Unit    string
	Queries []Query
}

type Query struct {
	Expr, Legend string
}

// Rows are the dashboard's panels, row by row, two to a row.
var Rows = []struct {
	Title  string
	Panels []Panel
}{
	{"Webhooks", []Panel{
		{"Deliveries by outcome", "reqps", []Query{{`sum by (outcome) (rate(forge_webhook_deliveries_total{instance=~"$instance"}[$__rate_interval]))`, "{{outcome}}"}}},
		{"Delivery answer time (p50, p95)", "s", []Query{
			{`histogram_quantile(0.5, sum by (le) (rate(forge_webhook_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`, "p50"},
			{`histogram_quantile(0.95, sum by (le) (rate(forge_webhook_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`, "p95"},
		}},
	}},
	{"Jobs", []Panel{
		{"Jobs by kind and outcome", "ops", []Query{{`sum by (kind, outcome) (rate(forge_jobs_total{instance=~"$instance"}[$__rate_interval]))`, "{{kind}} {{outcome}}"}}},
		{"Job time by kind (p95)", "s", []Query{{`histogram_quantile(0.95, sum by (le, kind) (rate(forge_job_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`, "{{kind}}"}}},
	}},
	{"GitHub", []Panel{
		{"API requests by status", "reqps", []Query{{`sum by (status) (rate(forge_github_requests_total{instance=~"$instance"}[$__rate_interval]))`, "{{status}}"}}},
		{"API request time (p95) by endpoint", "s", []Query{{`topk(10, histogram_quantile(0.95, sum by (le, method, endpoint) (rate(forge_github_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval]))))`, "{{method}} {{endpoint}}"}}},
		{"Rate limit left by installation", "percentunit", []Query{{`min by (installation) (forge_github_rate_remaining{instance=~"$instance"} / forge_github_rate_limit{instance=~"$instance"})`, "{{installation}}"}}},
		{"Response cache", "bytes", []Query{{`sum(forge_github_response_cache_bytes{instance=~"$instance"})`, "bytes"}}},
	}},
	{"Process", []Panel{
		{"Resident memory", "bytes", []Query{{`process_resident_memory_bytes{instance=~"$instance"}`, "{{instance}}"}}},
		{"Goroutines and open files", "short", []Query{
			{`go_goroutines{instance=~"$instance"}`, "goroutines {{instance}}"},
			{`process_open_fds{instance=~"$instance"}`, "open files {{instance}}"},
		}},
	}},
}

// Dashboard is forge.json: Grafana's dashboard model (schemaVersion 39),
// its Prometheus data source and instances chosen when imported or viewed.
func Dashboard() ([]byte, error) {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	var panels []any
	id, y := 1, 0
	for _, row := range Rows {
		panels = append(panels, map[string]any{"id": id, "type": "row", "title": row.Title, "collapsed": false,
			"gridPos": map[string]int{"h": 1, "w": 24, "x": 0, "y": y}, "panels": []any{}})
		id, y = id+1, y+1
		for i, p := range row.Panels {
			var targets []any
			for j, q := range p.Queries {
				targets = append(targets, map[string]any{"datasource": ds, "expr": q.Expr, "legendFormat": q.Legend, "refId": string(rune('A' + j))})
			}
			panels = append(panels, map[string]any{
				"id": id, "type": "timeseries", "title": p.Title, "datasource": ds, "targets": targets,
				"gridPos":     map[string]int{"h": 8, "w": 12, "x": 12 * (i % 2), "y": y + 8*(i/2)},
				"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.Unit}, "overrides": []any{}},
				"options":     map[string]any{"legend": map[string]any{"displayMode": "list", "placement": "bottom"}, "tooltip": map[string]any{"mode": "multi"}},
			})
			id++
		}
		y += 8 * ((len(row.Panels) + 1) / 2)
	}
	d := map[string]any{
		"title": "Forge", "uid": "forge", "schemaVersion": 39, "version": 1, "editable": true,
		"tags": []string{"forge"}, "time": map[string]string{"from": "now-6h", "to": "now"}, "refresh": "30s",
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
			map[string]any{"name": "instance", "type": "query", "datasource": ds, "label": "Instance",
				"query":      map[string]any{"query": "label_values(forge_webhook_deliveries_total, instance)", "refId": "instance"},
				"includeAll": true, "multi": true, "allValue": ".*", "refresh": 2,
				"current": map[string]any{"text": "All", "value": "$__all"}},
		}},
		"panels": panels,
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render the dashboard: %w", err)
	}
	return append(b, '\n'), nil
}
