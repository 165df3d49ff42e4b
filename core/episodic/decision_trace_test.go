package episodic_test

import (
	"strings"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/trace"
)

// A trace entry about a linking decision names both of its threads: an
// agent Alice gave only her second thread does not find in trace.list the
// decision linking it to her first one (episode.decisions hides it from
// that agent too); Alice does, and so does an agent given both.
func TestTraceEntriesAboutADecisionNeedReadOnBothThreads(t *testing.T) {
	r := newRig(t)
	w := newAliceWorld(r)
	r.Do(alice, "thread.share", map[string]any{"thread_id": w.second, "principal": "carol", "permissions": []string{"read"}}, nil)
	r.Do(alice, "thread.share", map[string]any{"thread_id": w.second, "principal": "dan", "permissions": []string{"read"}}, nil)
	r.Do(alice, "thread.share", map[string]any{"thread_id": w.first, "principal": "dan", "permissions": []string{"read"}}, nil)
	r.Do(alice, "episode.outcome", map[string]string{"decision_id": w.decision, "outcome": "correct"}, nil)
	mentions := func(who enginetest.Who) (kinds []string) {
		for _, e := range enginetest.Call[trace.ListResult](r.Rig, who, "trace.list", map[string]any{"limit": 0}).Entries {
			if strings.Contains(e.Message, w.decision) || strings.Contains(string(e.Data), w.decision) {
				kinds = append(kinds, e.Kind)
			}
		}
		return kinds
	}
	if got := mentions(carol); len(got) != 0 {
		t.Errorf("carol's trace.list shows the decision in %v", got)
	}
	for _, who := range []enginetest.Who{alice, {As: "dan"}} {
		if got := mentions(who); len(got) != 2 {
			t.Errorf("%s's trace.list shows the decision in %v, want episode.link and episode.outcome", who.As, got)
		}
	}
}
