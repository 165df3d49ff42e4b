package episodic

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// candidate is an earlier thread a new one may continue, with what the
// scorer and the model read of it.
type candidate struct {
	thread  *Thread
	text    string // every word the scorer weighs
	summary string // what the model is shown
	// found: a search of the message found this thread among those older
	// than the most recent (older.go); nil for a recent one.
	found *Found
}

// candidateTurns: how many of a candidate's last turns the scorer reads.
const candidateTurns = 20

// candidates reads what the linkers need of each recent thread (already
// most recent first): its title and last turns, archived or not, so that a
// decision never depends on whether a compaction has run yet.
func (e *Episodic) candidates(tx *storage.Tx, threads []*Thread) ([]candidate, error) {
	var out []candidate
	for _, t := range threads {
		c, err := candidateOf(tx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// candidateOf reads what the linkers need of one thread.
func candidateOf(tx *storage.Tx, t *Thread) (candidate, error) {
	turns, err := lastTurns(tx, t, candidateTurns, time.Time{})
	if err != nil {
		return candidate{}, err
	}
	var all, shown strings.Builder
	all.WriteString(t.Title)
	shown.WriteString("Title: " + t.Title)
	for i, u := range turns {
		all.WriteString("\n" + u.Text)
		if i >= len(turns)-6 { // the model sees the last few
			shown.WriteString("\n" + u.Speaker + ": " + u.Text)
		}
	}
	return candidate{thread: t, text: all.String(), summary: shown.String()}, nil
}

// maxDecisions: how many decisions a new thread records, strongest first
// (every LINK is kept, and every candidate the model judged).
const maxDecisions = 5

// assess runs both linkers on every candidate in parallel: the algorithmic
// scores (quick) and the model's judgements of the most recent few (one
// call each, all at once), bounded by the judge timeout. It returns the
// decisions to record, strongest first.
func (e *Episodic) assess(ctx context.Context, principal, message string, cands []candidate, previous string, now time.Time, threshold float64, prompt PromptVersion) []*Decision {
	// The thread a follow-up refers to is judged first, then the most recent.
	if i := slices.IndexFunc(cands, func(c candidate) bool { return c.thread.ID == previous }); i > 0 {
		cands = append(append([]candidate{cands[i]}, cands[:i]...), cands[i+1:]...)
	}
	decisions := make([]*Decision, len(cands))
	for i, c := range cands {
		decisions[i] = &Decision{Candidate: c.thread.ID, CreatedAt: now, Outcome: "", Found: c.found}
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
		EventJudging.Publish(e.env.Events, events.Only(principal), JudgingEvent{Candidates: ids, Message: message})
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
		decisions[i].Algorithmic, decisions[i].Signals = score(message, CandidateText{Text: c.text, LastActive: c.thread.LastActivityAt, MostRecent: c.thread.ID == previous}, now)
	}
	wg.Wait()
	if judged > 0 && llm.Available(e.env.LLM) {
		EventJudged.Publish(e.env.Events, events.Only(principal), JudgedEvent{Candidates: judged})
	}
	for i, d := range decisions {
		if i >= judged && llm.Available(e.env.LLM) {
			d.Assessment.Note = fmt.Sprintf("not judged by the model: it judges the %d most recent threads only", e.opts.MaxJudged)
		} else if i >= judged {
			d.Assessment = judge(ctx, e.env.LLM, prompt, "", "", 0) // says there is no model
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
