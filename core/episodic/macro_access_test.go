package episodic_test

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
)

// A macro summary draws on the linked threads of its thread's owner: an
// agent Alice gave only her second thread does not read her first one's
// words (her PIN) through it, by episode.get, episode.list, or the
// episode.compacted event; Alice does.
func TestAMacroSummaryIsShownOnlyToWhoMayReadWhatItDrawsOn(t *testing.T) {
	r := newRig(t)
	w := newAliceWorld(r)
	r.Do(alice, "thread.share", map[string]any{"thread_id": w.second, "principal": "carol", "permissions": []string{"read"}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	carols, alices := r.e.SubscribeAs(ctx, "carol", episodic.EventCompacted.Name()), r.e.SubscribeAs(ctx, "alice", episodic.EventCompacted.Name())
	res := enginetest.Call[episodic.CompactResult](r.Rig, alice, "episode.compact", map[string]string{"thread_id": w.second})
	if len(res.Episodes) != 1 || !strings.Contains(res.Episodes[0].Summaries.Macro, "4242") {
		t.Fatalf("alice's compaction: %+v; want one episode whose macro summary quotes her first thread", res.Episodes)
	}
	id := res.Episodes[0].ID
	leaks := func(ep *episodic.Episode) bool {
		return ep.Summaries != nil && strings.Contains(ep.Summaries.Macro, "4242")
	}

	if got := enginetest.Call[episodic.EpisodeResult](r.Rig, carol, "episode.get", episodic.EpisodeArgs{EpisodeID: id}).Episode; leaks(got.Episode) {
		t.Errorf("carol's episode.get: macro %q", got.Summaries.Macro)
	}
	for _, ep := range enginetest.Call[episodic.EpisodesResult](r.Rig, carol, "episode.list", episodic.EpisodesArgs{ThreadID: w.second}).Episodes {
		if leaks(ep) {
			t.Errorf("carol's episode.list: macro %q", ep.Summaries.Macro)
		}
	}
	if ep, _ := episodic.EventCompacted.Of(<-carols); leaks(&ep) {
		t.Errorf("carol's episode.compacted: macro %q", ep.Summaries.Macro)
	}
	if ep, _ := episodic.EventCompacted.Of(<-alices); !leaks(&ep) {
		t.Errorf("alice's episode.compacted lacks her macro summary: %+v", ep.Summaries)
	}
	if got := enginetest.Call[episodic.EpisodeResult](r.Rig, alice, "episode.get", episodic.EpisodeArgs{EpisodeID: id}).Episode; !leaks(got.Episode) {
		t.Errorf("alice's episode.get lacks her macro summary: %+v", got.Summaries)
	}
}
