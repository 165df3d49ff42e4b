package episodic

import (
	"slices"
	"time"
)

// Channels. Explicit ones carry the thread the user selected; implicit ones
// (a text message, a call) have no threads, so engram infers them from
// inactivity.
var (
	ExplicitChannels = []string{"web", "app"}
	ImplicitChannels = []string{"sms", "whatsapp", "voice"}
)

// IsExplicit reports whether channel lets the user pick a thread.
func IsExplicit(channel string) bool { return slices.Contains(ExplicitChannels, channel) }

// Thread statuses.
const (
	StatusActive    = "active"    // taking messages
	StatusEnded     = "ended"     // a newer thread took over (implicit channels); compaction queued
	StatusCompacted = "compacted" // ended, and its episodes compacted
)

// Defaults.
const (
	DefaultInactivityTimeout = 30 // minutes
	DefaultThreshold         = 0.7
	// EpisodeMaxTurns: turn 51 of an episode starts a new one (seed 5.2).
	EpisodeMaxTurns = 50
)

// Thread is a conversation thread.
type Thread struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Channels lists every channel the thread was used on, in order of
	// first use (a thread continues across implicit channels).
	Channels []string `json:"channels"`
	Status   string   `json:"status"`
	// TurnCount counts every turn, archived ones included.
	TurnCount      int        `json:"turn_count"`
	CreatedAt      time.Time  `json:"created_at"`
	LastActivityAt time.Time  `json:"last_activity_at"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
	// InactivityTimeoutMinutes: on an implicit channel, a message after a
	// gap this long or longer starts a new thread.
	InactivityTimeoutMinutes int `json:"inactivity_timeout_minutes"`
	// Episodes are the thread's own episodes, oldest first; the last one is
	// open while the thread is active.
	Episodes []string `json:"episodes"`
	// LinkedThreads are the threads linked to this one, either way.
	LinkedThreads []string `json:"linked_threads"`
	// CrossThreadEpisodes are the cross-thread episodes it belongs to.
	CrossThreadEpisodes []string `json:"cross_thread_episodes"`

	titled bool // the title was given, not made up (while creating it)
}

func (t *Thread) timeout() time.Duration {
	return time.Duration(t.InactivityTimeoutMinutes) * time.Minute
}

func (t *Thread) currentEpisode() string {
	if len(t.Episodes) == 0 {
		return ""
	}
	return t.Episodes[len(t.Episodes)-1]
}

// Turn is one message of a thread.
type Turn struct {
	ThreadID  string    `json:"thread_id"`
	Number    int       `json:"number"` // 1-based, in the thread
	Speaker   string    `json:"speaker"`
	Text      string    `json:"text"`
	Channel   string    `json:"channel"`
	At        time.Time `json:"at"`
	EpisodeID string    `json:"episode_id"`
	// Archived: the turn's episode was compacted; the turn is kept whole in
	// the archive and retrievable with episode.get.
	Archived bool `json:"archived,omitempty"`
}

// Episode statuses.
const (
	EpisodeOpen      = "open"      // taking turns
	EpisodeClosed    = "closed"    // full or its thread ended; compaction queued
	EpisodeCompacted = "compacted" // summarized; turns archived
)

// Episode is a run of at most EpisodeMaxTurns turns of one thread: the unit
// compaction works on.
type Episode struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
	Number   int    `json:"number"` // 1-based, in the thread
	Status   string `json:"status"`
	// Reason says why it closed: thread_end, size or manual.
	Reason    string     `json:"reason,omitempty"`
	FirstTurn int        `json:"first_turn"`
	LastTurn  int        `json:"last_turn"`
	TurnCount int        `json:"turn_count"`
	StartedAt time.Time  `json:"started_at"`
	ClosedAt  *time.Time `json:"closed_at,omitempty"`
	// CompactedAt is the engine time the compaction was for: the close
	// (the work follows in the background, or after a restart).
	CompactedAt *time.Time `json:"compacted_at,omitempty"`
	Summaries   *Summaries `json:"summaries,omitempty"`
	Skills      []Skill    `json:"skills,omitempty"`
}

// Summaries are an episode's compaction tiers.
type Summaries struct {
	// Micro: one per few turns.
	Micro []Micro `json:"micro"`
	// Meso: the whole episode.
	Meso string `json:"meso"`
	// Macro: across the episode's thread and the threads linked to it.
	Macro string `json:"macro"`
}

// Micro is the summary of a few consecutive turns.
type Micro struct {
	Turns [2]int `json:"turns"` // first and last turn number
	Text  string `json:"text"`
}

// Skill kinds.
const (
	SkillFact       = "fact"
	SkillPreference = "preference"
	SkillProcedure  = "procedure"
)

// Skill is something reusable learned from an episode.
type Skill struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	Turn int    `json:"turn"` // where it was said
	// From: who taught it — the user, or an answer the assistant gave.
	From string `json:"from"`
}

// CrossEpisode groups threads that continue one another.
type CrossEpisode struct {
	ID            string    `json:"id"`
	LinkedThreads []string  `json:"linked_threads"`
	Decisions     []string  `json:"decisions"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Linking decisions and confidences (the seed's vocabulary).
const (
	Link     = "LINK"
	DontLink = "DON'T_LINK"

	ConfidenceHigh      = "HIGH"             // both assessments agree
	ConfidenceUncertain = "UNCERTAIN"        // they disagree; the more confident one decided
	ConfidenceAlgorithm = "ALGORITHMIC_ONLY" // no model judged it

	OutcomeCorrect   = "correct"
	OutcomeIncorrect = "incorrect"
)

// Decision is one linking decision: a new thread against one earlier one.
type Decision struct {
	ID        string `json:"decision_id"`
	ThreadID  string `json:"thread_id"`
	Candidate string `json:"candidate_thread_id"`
	// Algorithmic is the algorithmic score; LLM the model's probability
	// that they are related (its confidence when it says related, one minus
	// it when it says not), null when no model judged.
	Algorithmic float64  `json:"algorithmic"`
	LLM         *float64 `json:"llm"`
	// Agreement is null when no model judged.
	Agreement  *bool  `json:"agreement"`
	Confidence string `json:"confidence"`
	Decision   string `json:"decision"`
	// DecidedBy: both, algorithmic or llm.
	DecidedBy    string  `json:"decided_by"`
	Disagreement bool    `json:"disagreement"`
	Threshold    float64 `json:"threshold"`
	// Outcome is the outcome a person marked (episode.outcome), "" if none.
	Outcome   string     `json:"outcome"`
	OutcomeAt *time.Time `json:"outcome_at,omitempty"`
	// Inferred are the outcomes engram read from what the user did next
	// (infer.go), oldest first; absent when there are none.
	Inferred []InferredOutcome `json:"inferred,omitempty"`
	// CrossThreadEpisode is the episode the link made or extended.
	CrossThreadEpisode string  `json:"cross_thread_episode,omitempty"`
	Signals            Signals `json:"signals"`
	// Found says why the candidate was one though it is older than the
	// most recently active threads: a search of the new message found
	// it (older.go); absent for the recent ones.
	Found      *Found     `json:"found,omitempty"`
	Assessment Assessment `json:"llm_assessment"`
	CreatedAt  time.Time  `json:"created_at"`
}

// Assessment is the model's half of a decision.
type Assessment struct {
	// Available is false without a model, or when the model was not asked
	// (Note says why), failed or answered out of shape (Error says how).
	Available     bool     `json:"available"`
	Related       bool     `json:"related"`
	Confidence    float64  `json:"confidence"`
	Reasoning     string   `json:"reasoning,omitempty"`
	KeySignals    []string `json:"key_signals,omitempty"`
	PromptVersion int      `json:"prompt_version,omitempty"`
	Note          string   `json:"note,omitempty"`
	Error         string   `json:"error,omitempty"`
}
