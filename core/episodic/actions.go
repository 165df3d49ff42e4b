package episodic

import (
	"context"

	"github.com/engram-console/engram/core/action"
)

func (e *Episodic) register() {
	reg := e.env.Actions
	action.Register(reg, action.Spec{Name: "thread.message", Summary: "Route a message into a thread: the selected one, the one it continues, or a new one linked to earlier threads"}, e.actMessage)
	action.Register(reg, action.Spec{Name: "thread.configure", Summary: "Set a thread's inactivity timeout (implicit channels start a new thread after it)"}, e.actConfigure)
	action.Register(reg, action.Spec{Name: "thread.list", Summary: "Every thread, most recently active first", ReadOnly: true}, e.actList)
	action.Register(reg, action.Spec{Name: "thread.get", Summary: "A thread with its turns and linking decisions", ReadOnly: true}, e.actGet)
	action.Register(reg, action.Spec{Name: "episode.context", Summary: "A thread's working memory: the thread, and on implicit channels the threads linked to it", ReadOnly: true}, e.actContext)
	action.Register(reg, action.Spec{Name: "episode.compact", Summary: "Close a thread's open episode and compact its episodes into summaries and skills now"}, e.actCompact)
	action.Register(reg, action.Spec{Name: "episode.list", Summary: "Episodes (of one thread or all) and cross-thread episodes", ReadOnly: true}, e.actEpisodes)
	action.Register(reg, action.Spec{Name: "episode.get", Summary: "An episode with its summaries, skills and raw turns (archived ones too)", ReadOnly: true}, e.actEpisode)
	action.Register(reg, action.Spec{Name: "episode.decisions", Summary: "Linking decisions with both scores, agreement, confidence and outcome", ReadOnly: true}, e.actDecisions)
	action.Register(reg, action.Spec{Name: "episode.outcome", Summary: "Mark a linking decision correct or incorrect (for tuning)"}, e.actOutcome)
	action.Register(reg, action.Spec{Name: "episode.tune", Summary: "Recompute the linking threshold and the model's guidance from marked decisions"}, e.actTune)
	action.Register(reg, action.Spec{Name: "episode.tuning", Summary: "The linking threshold, the model's prompt versions and past tunings", ReadOnly: true}, e.actTuning)
}

func (e *Episodic) actMessage(ctx context.Context, call action.Call, a MessageRequest) (MessageResult, error) {
	return e.Message(ctx, call, a)
}

type configureArgs struct {
	ThreadID string `json:"thread_id" arg:"required" help:"the thread"`
	Minutes  int    `json:"inactivity_timeout_minutes" arg:"required" help:"minutes of inactivity after which a message on an implicit channel starts a new thread (default 30)"`
}

func (e *Episodic) actConfigure(ctx context.Context, call action.Call, a configureArgs) (map[string]*Thread, error) {
	t, err := e.Configure(ctx, call, a.ThreadID, a.Minutes)
	return map[string]*Thread{"thread": t}, err
}

func (e *Episodic) actList(ctx context.Context, call action.Call, _ struct{}) (map[string][]*Thread, error) {
	ts, err := e.Threads(ctx)
	return map[string][]*Thread{"threads": ts}, err
}

type threadArgs struct {
	ThreadID string `json:"thread_id" arg:"required" help:"the thread"`
	Archived bool   `json:"include_archived,omitempty" help:"also the turns compaction archived"`
}

func (e *Episodic) actGet(ctx context.Context, call action.Call, a threadArgs) (map[string]ThreadView, error) {
	v, err := e.Get(ctx, a.ThreadID, a.Archived)
	return map[string]ThreadView{"thread": v}, err
}

type contextArgs struct {
	ThreadID string `json:"thread_id" arg:"required" help:"the thread"`
	Channel  string `json:"channel,omitempty" help:"the channel the next message comes on (default: the thread's last); explicit ones get the thread alone"`
	Input    string `json:"input,omitempty" help:"the message about to be answered (default: the thread's last user message)"`
}

func (e *Episodic) actContext(ctx context.Context, call action.Call, a contextArgs) (map[string]Context, error) {
	c, err := e.ContextFor(ctx, a.ThreadID, a.Channel, a.Input)
	return map[string]Context{"context": c}, err
}

type compactArgs struct {
	ThreadID string `json:"thread_id" arg:"required" help:"the thread"`
}

func (e *Episodic) actCompact(ctx context.Context, call action.Call, a compactArgs) (map[string][]*Episode, error) {
	eps, err := e.Compact(ctx, call, a.ThreadID)
	return map[string][]*Episode{"episodes": eps}, err
}

type episodesArgs struct {
	ThreadID string `json:"thread_id,omitempty" help:"only this thread's episodes (default: every thread's)"`
}

type episodesResult struct {
	Episodes            []*Episode      `json:"episodes"`
	CrossThreadEpisodes []*CrossEpisode `json:"cross_thread_episodes"`
}

func (e *Episodic) actEpisodes(ctx context.Context, call action.Call, a episodesArgs) (episodesResult, error) {
	eps, xs, err := e.Episodes(ctx, a.ThreadID)
	return episodesResult{Episodes: eps, CrossThreadEpisodes: xs}, err
}

type episodeArgs struct {
	EpisodeID string `json:"episode_id" arg:"required" help:"the episode (episode.list shows them)"`
}

func (e *Episodic) actEpisode(ctx context.Context, call action.Call, a episodeArgs) (map[string]EpisodeView, error) {
	v, err := e.Episode(ctx, a.EpisodeID)
	return map[string]EpisodeView{"episode": v}, err
}

type decisionsArgs struct {
	ThreadID string `json:"thread_id,omitempty" help:"only decisions about this thread (default: all)"`
}

func (e *Episodic) actDecisions(ctx context.Context, call action.Call, a decisionsArgs) (map[string][]*Decision, error) {
	ds, err := e.Decisions(a.ThreadID)
	return map[string][]*Decision{"decisions": ds}, err
}

type outcomeArgs struct {
	DecisionID string `json:"decision_id" arg:"required" help:"the decision (episode.decisions lists them)"`
	Outcome    string `json:"outcome" arg:"required" help:"correct or incorrect"`
}

func (e *Episodic) actOutcome(ctx context.Context, call action.Call, a outcomeArgs) (map[string]*Decision, error) {
	d, err := e.Outcome(ctx, call, a.DecisionID, a.Outcome)
	return map[string]*Decision{"decision": d}, err
}

func (e *Episodic) actTune(ctx context.Context, call action.Call, _ struct{}) (TuningRecord, error) {
	return e.Tune(ctx, call)
}

func (e *Episodic) actTuning(ctx context.Context, call action.Call, _ struct{}) (*Tuning, error) {
	return e.TuningState()
}
