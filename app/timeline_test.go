package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/pipeline"
)

func newTestTimeline(t *testing.T) (*timeline, *store.Store) {
	t.Helper()
	st := storetest.Open(t, storetest.SQLiteURL(t))
	return newTimeline(st, zerolog.Nop(), func(s string) string { return s }, prometheus.NewRegistry()), st
}

func kinds(t *testing.T, st *store.Store, plan int64) []string {
	t.Helper()
	events, _, err := st.PlanEvents(context.Background(), plan, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events {
		out = append(out, e.Kind+" "+e.Name+" "+e.Outcome)
	}
	return out
}

// TestJobScope: a job's writes before it names its plan join the plan it
// names first; its delivery joins each plan it works on, once; its own
// line goes on each; an attempt that only waited leaves nothing.
func TestJobScope(t *testing.T) {
	tl, st := newTestTimeline(t)
	ctx := context.Background()
	if _, err := st.DB().ExecContext(ctx, `INSERT INTO deliveries (delivery_id, event, action, repository, outcome, received_at)
		VALUES ('d-1', 'pull_request', 'closed', 'octo/hello', 'accepted', $1)`, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	tl.Start()
	job := &rivertype.JobRow{ID: 1, Kind: "pull_request", Attempt: 1, CreatedAt: time.Now().Add(-time.Second), Metadata: []byte(`{"forge_delivery":"d-1"}`)}
	write := func(ctx context.Context, method, path string) {
		r := httptest.NewRequest(method, "https://api.github.com"+path, nil).WithContext(ctx)
		recordWrite(r, &http.Response{StatusCode: 201}, nil, time.Now())
	}
	err := tl.Work(ctx, job, func(ctx context.Context) error {
		time.Sleep(5 * time.Millisecond) // the job's line sorts before its writes
		write(ctx, http.MethodGet, "/repos/octo/hello/pulls/2")
		write(ctx, http.MethodPost, "/repos/octo/hello/issues/comments/9/reactions")
		tl.Working(ctx, &pipeline.Plan{ID: 7})
		write(ctx, http.MethodPatch, "/repos/octo/hello/pulls/2")
		tl.Working(ctx, &pipeline.Plan{ID: 8})
		tl.Working(ctx, &pipeline.Plan{ID: 7})
		write(ctx, http.MethodPost, "/repos/octo/hello/issues/2/labels")
		return errors.New("GitHub is down")
	})
	if err == nil {
		t.Fatal("the job's error was lost")
	}
	waited := &rivertype.JobRow{ID: 2, Kind: "review", Attempt: 1, CreatedAt: time.Now(), Metadata: []byte(`{"forge_delivery":"d-1"}`)}
	_ = tl.Work(ctx, waited, func(ctx context.Context) error {
		tl.Working(ctx, &pipeline.Plan{ID: 9})
		return river.JobSnooze(time.Second)
	})
	tl.Stop(ctx)

	want7 := []string{"delivery pull_request.closed ", "job pull_request error", "github POST /repos/{owner}/{repo}/issues/comments/{n}/reactions 201",
		"github PATCH /repos/{owner}/{repo}/pulls/{n} 201", "github POST /repos/{owner}/{repo}/issues/{n}/labels 201"}
	if got := kinds(t, st, 7); !slices.Equal(got, want7) {
		t.Errorf("plan 7's timeline:\n%q\nwant\n%q", got, want7)
	}
	if got := kinds(t, st, 8); !slices.Equal(got, []string{"delivery pull_request.closed ", "job pull_request error"}) {
		t.Errorf("plan 8's timeline: %q", got)
	}
	if got := kinds(t, st, 9); len(got) != 1 || got[0] != "delivery pull_request.closed " {
		t.Errorf("plan 9's timeline %q: an attempt that only waited left a line", got)
	}
	events, _, _ := st.PlanEvents(ctx, 7, 100)
	if events[1].Detail != "GitHub is down" {
		t.Errorf("the job's detail %q, want its error", events[1].Detail)
	}
}

// TestTimelineBounded: events beyond the queue are dropped and counted,
// never waited for.
func TestTimelineBounded(t *testing.T) {
	tl, _ := newTestTimeline(t)
	for i := 0; i < timelineQueue+3; i++ {
		tl.add(store.PlanEvent{PlanID: 1, Kind: store.EventJob, Name: "x", At: time.Now()})
	}
	var m dto.Metric
	if err := tl.dropped.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 3 {
		t.Errorf("dropped %v, want 3", n)
	}
}
