//go:build !noplanning

package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/wire"
	"github.com/engram-console/engram/planner"
)

// lossy is a connection whose event streams lose plan.finished, as a
// remote stream that was resumed too late does: a wire.EventGap stands
// in its place.
type lossy struct{ conn.Conn }

func (l lossy) SubscribeAs(ctx context.Context, principal string, kinds ...string) <-chan events.Event {
	in := l.Conn.SubscribeAs(ctx, principal, kinds...)
	out := make(chan events.Event, 64)
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Name == planner.EventPlanFinished.Name() {
				ev = events.Event{Name: wire.EventGap, At: ev.At}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// run_plan with wait and a progress token answers after the run's
// plan.finished, so that its progress goes out first; when the stream
// says it missed events, it must not wait for one that will never come.
func TestAWaitingRunPlanAnswersWhenItsEventsHadAGap(t *testing.T) {
	e := newEngine(t)
	s := New(lossy{e}, Options{Agent: "alice"})
	t.Cleanup(s.Close)
	cs := connectWith(t, s, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {}})
	createPlan(t, cs, chain)
	params := &mcp.CallToolParams{Name: "run_plan", Arguments: map[string]any{"plan_id": "chain", "wait": true}}
	params.SetProgressToken("run-1")
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("run_plan: %v", err)
	}
	if res.IsError {
		t.Fatalf("run_plan: %+v", toolErr(t, res))
	}
	var done PlanStatusOutput
	decode(t, res, &done)
	if done.Status != "completed" {
		t.Errorf("run_plan = %+v; want the plan completed", done)
	}
}
