package episodic

import (
	"context"
	"time"
)

// Test hooks, for the external tests of this package.

// CompactHook returns opts with a hook that runs at each stage of every
// compaction ("summaries", "archive" midway through archiving the turns,
// "commit" just before the commit); an error it returns fails the
// compaction there.
func CompactHook(opts Options, hook func(stage string) error) Options {
	opts.compactHook = hook
	return opts
}

// FixedScores returns opts whose algorithmic scorer answers score(message,
// candidate title) instead of Score (for scenarios that give the scores).
func FixedScores(opts Options, score func(message, CandidateText string) float64) Options {
	opts.scorer = func(message string, cand CandidateText, now time.Time) (float64, Signals) {
		_, sig := Score(message, cand, now)
		return score(message, cand.Text), sig
	}
	return opts
}

// Settle waits for background compactions to finish.
func (e *Episodic) Settle() { e.compactor.Settle(context.Background()) }
