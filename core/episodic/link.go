package episodic

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// candidate is an earlier thread a new one may continue, with what the
// scorer and the model read of it.
type candidate struct {
	thread  *Thread
	text    string // every word the scorer weighs
	summary string // what the model is shown
}

// candidateTurns: how many of a candidate's last turns the scorer reads.
const candidateTurns = 20

// candidates reads what the linkers need of each recent thread (already
// most recent first).
func (e *Episodic) candidates(tx *storage.Tx, threads []*Thread) ([]candidate, error) {
	var out []candidate
	for _, t := range threads {
		turns, err := lastTurns(tx, t, candidateTurns)
		if err != nil {
			return nil, err
		}
		var all, shown strings.Builder
		all.WriteString(t.Title)
		shown.WriteString("Title: " + t.Title)
		// A compacted thread is known by its summaries and skills.
		for _, id := range t.Episodes {
			ep, err := loadEpisode(tx, id)
			if err != nil {
				return nil, err
			}
			if ep.Summaries == nil {
				continue
			}
			all.WriteString("\n" + ep.Summaries.Meso)
			shown.WriteString("\nSummary: " + ep.Summaries.Meso)
			for _, s := range ep.Skills {
				all.WriteString("\n" + s.Text)
			}
		}
		for i, u := range turns {
			all.WriteString("\n" + u.Text)
			if i >= len(turns)-6 { // the model sees the last few
				shown.WriteString("\n" + u.Speaker + ": " + u.Text)
			}
		}
		out = append(out, candidate{thread: t, text: all.String(), summary: shown.String()})
	}
	return out, nil
}

// maxDecisions: how many decisions a new thread records, strongest first
// (every LINK is kept, and every candidate the model judged).
const maxDecisions = 5

// assess runs both linkers on every candidate in parallel: the algorithmic
// scores (quick) and the model's judgements of the most recent few (one
// call each, all at once), bounded by the judge timeout. It returns the
// decisions to record, strongest first.
func (e *Episodic) assess(ctx context.Context, message string, cands []candidate, now time.Time, threshold float64, prompt PromptVersion) []*Decision {
	decisions := make([]*Decision, len(cands))
	for i, c := range cands {
		decisions[i] = &Decision{Candidate: c.thread.ID, CreatedAt: now, Outcome: ""}
	}
	judged := min(len(cands), e.opts.MaxJudged)
	ctx, cancel := context.WithTimeout(ctx, e.opts.JudgeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	if judged > 0 && llm.Available(e.env.LLM) {
		ids := make([]string, judged)
		for i := range judged {
			ids[i] = cands[i].thread.ID
		}
		e.env.Events.Publish(EventJudging, map[string]any{"candidates": ids, "message": message})
	}
	for i := range judged {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cands[i]
			decisions[i].Assessment = judge(ctx, e.env.LLM, prompt, c.summary, message, now.Sub(c.thread.LastActivityAt))
		}()
	}
	// The algorithmic half meanwhile, in this goroutine.
	score := Score
	if e.opts.scorer != nil {
		score = e.opts.scorer
	}
	for i, c := range cands {
		decisions[i].Algorithmic, decisions[i].Signals = score(message, CandidateText{Text: c.text, LastActive: c.thread.LastActivityAt, MostRecent: i == 0}, now)
	}
	wg.Wait()
	for i, d := range decisions {
		if i >= judged {
			d.Assessment.Note = "not judged by the model: only the most recent threads are"
		}
		decide(d, threshold)
	}
	// Strongest first: links, then by score.
	sort.SliceStable(decisions, func(i, j int) bool {
		a, b := decisions[i], decisions[j]
		if (a.Decision == Link) != (b.Decision == Link) {
			return a.Decision == Link
		}
		return strength(a) > strength(b)
	})
	var keep []*Decision
	for i, d := range decisions {
		if i < maxDecisions || d.Decision == Link || d.Assessment.Available {
			keep = append(keep, d)
		}
	}
	return keep
}

// strength orders decisions: the model's probability when it judged and
// was the more confident, else the algorithmic score.
func strength(d *Decision) float64 {
	if d.DecidedBy == "llm" && d.LLM != nil {
		return *d.LLM
	}
	return d.Algorithmic
}
