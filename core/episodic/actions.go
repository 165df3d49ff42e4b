package episodic

import (
	"context"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
)

func (e *Episodic) register() {
	reg := e.env.Actions
	ActionThreadMessage.Register(reg, action.Spec{Summary: "Route a message into a thread: the selected one, the one it continues, or a new one linked to earlier threads"}, e.actMessage)
	ActionThreadConfigure.Register(reg, action.Spec{Summary: "Set a thread's inactivity timeout (implicit channels start a new thread after it)"}, e.actConfigure)
	ActionThreadList.Register(reg, action.Spec{Summary: "Every thread, most recently active first", ReadOnly: true}, e.actList)
	ActionThreadGet.Register(reg, action.Spec{Summary: "A thread with its turns and linking decisions", ReadOnly: true}, e.actGet)
	ActionEpisodeContext.Register(reg, action.Spec{Summary: "A thread's working memory: the thread, and on implicit channels the threads linked to it", ReadOnly: true}, e.actContext)
	ActionEpisodeCompact.Register(reg, action.Spec{Summary: "Close a thread's open episode and compact its episodes into summaries and skills now"}, e.actCompact)
	ActionEpisodeList.Register(reg, action.Spec{Summary: "Episodes (of one thread or all) and cross-thread episodes", ReadOnly: true}, e.actEpisodes)
	ActionEpisodeGet.Register(reg, action.Spec{Summary: "An episode with its summaries, skills and raw turns (archived ones too)", ReadOnly: true}, e.actEpisode)
	ActionEpisodeDecisions.Register(reg, action.Spec{Summary: "Linking decisions with both scores, agreement, confidence and outcome", ReadOnly: true}, e.actDecisions)
	ActionEpisodeOutcome.Register(reg, action.Spec{Summary: "Mark a linking decision correct or incorrect (for tuning)"}, e.actOutcome)
	ActionEpisodeTune.Register(reg, action.Spec{Summary: "Recompute the linking threshold and the model's guidance from marked decisions"}, e.actTune)
	ActionThreadShare.Register(reg, action.Spec{Summary: "Grant an agent permissions on a thread (and its episodes)"}, e.actShare)
	ActionThreadRevoke.Register(reg, action.Spec{Summary: "Remove an agent's access to a thread"}, e.actRevoke)
	ActionEpisodeTuning.Register(reg, action.Spec{Summary: "The linking threshold, the model's prompt versions and past tunings", ReadOnly: true}, e.actTuning)
}

// thread.message takes a MessageRequest and answers a MessageResult
// (episodic.go).

func (e *Episodic) actMessage(ctx context.Context, call action.Call, a MessageRequest) (MessageResult, error) {
	return e.Message(ctx, call, a)
}

// ConfigureArgs is thread.configure's arguments.
type ConfigureArgs struct {
	ThreadID string `json:"thread_id" arg:"required" help:"the thread"`
	Minutes  int    `json:"inactivity_timeout_minutes" arg:"required" help:"minutes of inactivity after which a message on an implicit channel starts a new thread (default 30)"`
}

// ThreadResult is thread.configure's result: the thread as it now is.
type ThreadResult struct {
	Thread *Thread `json:"thread"`
}

func (e *Episodic) actConfigure(ctx context.Context, call action.Call, a ConfigureArgs) (ThreadResult, error) {
	t, err := e.Configure(ctx, call, a.ThreadID, a.Minutes)
	return ThreadResult{Thread: t}, err
}

// ListResult is thread.list's result (it takes no arguments).
type ListResult struct {
	// Threads, most recently active first; never null.
	Threads []*Thread `json:"threads"`
}

func (e *Episodic) actList(ctx context.Context, call action.Call, _ action.None) (ListResult, error) {
	ts, err := e.Threads(ctx, call.Principal)
	return ListResult{Threads: ts}, err
}

// GetArgs is thread.get's arguments.
type GetArgs struct {
	ThreadID        string `json:"thread_id" arg:"required" help:"the thread"`
	IncludeArchived bool   `json:"include_archived,omitempty" help:"also the turns compaction archived"`
}

// GetResult is thread.get's result.
type GetResult struct {
	Thread ThreadView `json:"thread"`
}

func (e *Episodic) actGet(ctx context.Context, call action.Call, a GetArgs) (GetResult, error) {
	v, err := e.Get(ctx, call.Principal, a.ThreadID, a.IncludeArchived)
	return GetResult{Thread: v}, e.failed(ctx, call, err)
}

// ContextArgs is episode.context's arguments.
type ContextArgs struct {
	ThreadID string `json:"thread_id" arg:"required" help:"the thread"`
	Channel  string `json:"channel,omitempty" help:"the channel the next message comes on (default: the thread's last); explicit ones get the thread alone"`
	Input    string `json:"input,omitempty" help:"the message about to be answered (default: the thread's last user message)"`
}

// ContextResult is episode.context's result.
type ContextResult struct {
	Context Context `json:"context"`
}

func (e *Episodic) actContext(ctx context.Context, call action.Call, a ContextArgs) (ContextResult, error) {
	c, err := e.ContextFor(ctx, call.Principal, a.ThreadID, a.Channel, a.Input)
	return ContextResult{Context: c}, e.failed(ctx, call, err)
}

// CompactArgs is episode.compact's arguments.
type CompactArgs struct {
	ThreadID string `json:"thread_id" arg:"required" help:"the thread"`
}

// CompactResult is episode.compact's result: the episodes it compacted.
type CompactResult struct {
	Episodes []*Episode `json:"episodes"`
}

func (e *Episodic) actCompact(ctx context.Context, call action.Call, a CompactArgs) (CompactResult, error) {
	eps, err := e.Compact(ctx, call, a.ThreadID)
	return CompactResult{Episodes: eps}, err
}

// EpisodesArgs is episode.list's arguments.
type EpisodesArgs struct {
	ThreadID string `json:"thread_id,omitempty" help:"only this thread's episodes (default: every thread's)"`
}

// EpisodesResult is episode.list's result. Its fields are not in
// alphabetical order: it was always a struct, and its output stays as it was.
type EpisodesResult struct {
	Episodes            []*Episode      `json:"episodes"`
	CrossThreadEpisodes []*CrossEpisode `json:"cross_thread_episodes"`
}

func (e *Episodic) actEpisodes(ctx context.Context, call action.Call, a EpisodesArgs) (EpisodesResult, error) {
	eps, xs, err := e.Episodes(ctx, call.Principal, a.ThreadID)
	return EpisodesResult{Episodes: eps, CrossThreadEpisodes: xs}, e.failed(ctx, call, err)
}

// EpisodeArgs is episode.get's arguments.
type EpisodeArgs struct {
	EpisodeID string `json:"episode_id" arg:"required" help:"the episode (episode.list shows them)"`
}

// EpisodeResult is episode.get's result.
type EpisodeResult struct {
	Episode EpisodeView `json:"episode"`
}

func (e *Episodic) actEpisode(ctx context.Context, call action.Call, a EpisodeArgs) (EpisodeResult, error) {
	v, err := e.Episode(ctx, call.Principal, a.EpisodeID)
	return EpisodeResult{Episode: v}, e.failed(ctx, call, err)
}

// DecisionsArgs is episode.decisions' arguments.
type DecisionsArgs struct {
	ThreadID string `json:"thread_id,omitempty" help:"only decisions about this thread (default: all)"`
}

// DecisionsResult is episode.decisions' result.
type DecisionsResult struct {
	// Decisions, oldest first.
	Decisions []*Decision `json:"decisions"`
}

func (e *Episodic) actDecisions(ctx context.Context, call action.Call, a DecisionsArgs) (DecisionsResult, error) {
	ds, err := e.Decisions(call.Principal, a.ThreadID)
	return DecisionsResult{Decisions: ds}, e.failed(ctx, call, err)
}

// OutcomeArgs is episode.outcome's arguments.
type OutcomeArgs struct {
	DecisionID string `json:"decision_id" arg:"required" help:"the decision (episode.decisions lists them)"`
	Outcome    string `json:"outcome" arg:"required" help:"correct or incorrect"`
}

// OutcomeResult is episode.outcome's result: the decision, marked.
type OutcomeResult struct {
	Decision *Decision `json:"decision"`
}

func (e *Episodic) actOutcome(ctx context.Context, call action.Call, a OutcomeArgs) (OutcomeResult, error) {
	d, err := e.Outcome(ctx, call, a.DecisionID, a.Outcome)
	return OutcomeResult{Decision: d}, err
}

// episode.tune takes no arguments and answers a TuningRecord; episode.tuning
// takes none and answers the Tuning (tune.go).

func (e *Episodic) actTune(ctx context.Context, call action.Call, _ action.None) (TuningRecord, error) {
	if call.Principal != access.LegacyOwner && call.Principal != "" {
		return TuningRecord{}, e.failed(ctx, call, errOperatorOnly(call.Principal, e.env.Clock.Now()))
	}
	return e.Tune(ctx, call)
}

func (e *Episodic) actTuning(ctx context.Context, call action.Call, _ action.None) (*Tuning, error) {
	return e.TuningState()
}
