package episodic

import (
	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
)

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionThreadMessage is the thread.message action. Route a message into a thread: the selected one, the one it continues, or a new one linked to earlier threads.
	ActionThreadMessage = action.NewRef[MessageRequest, MessageResult]("thread.message")
	// ActionThreadConfigure is the thread.configure action. Set a thread's inactivity timeout (implicit channels start a new thread after it).
	ActionThreadConfigure = action.NewRef[ConfigureArgs, ThreadResult]("thread.configure")
	// ActionThreadList is the thread.list action. Every thread, most recently active first.
	ActionThreadList = action.NewRef[action.None, ListResult]("thread.list")
	// ActionThreadGet is the thread.get action. A thread with its turns and linking decisions.
	ActionThreadGet = action.NewRef[GetArgs, GetResult]("thread.get")
	// ActionEpisodeContext is the episode.context action. A thread's working memory: the thread, and on implicit channels the threads linked to it.
	ActionEpisodeContext = action.NewRef[ContextArgs, ContextResult]("episode.context")
	// ActionEpisodeCompact is the episode.compact action. Close a thread's open episode and compact its episodes into summaries and skills now.
	ActionEpisodeCompact = action.NewRef[CompactArgs, CompactResult]("episode.compact")
	// ActionEpisodeList is the episode.list action. Episodes (of one thread or all) and cross-thread episodes.
	ActionEpisodeList = action.NewRef[EpisodesArgs, EpisodesResult]("episode.list")
	// ActionEpisodeGet is the episode.get action. An episode with its summaries, skills and raw turns (archived ones too).
	ActionEpisodeGet = action.NewRef[EpisodeArgs, EpisodeResult]("episode.get")
	// ActionEpisodeDecisions is the episode.decisions action. Linking decisions with both scores, agreement, confidence and outcome.
	ActionEpisodeDecisions = action.NewRef[DecisionsArgs, DecisionsResult]("episode.decisions")
	// ActionEpisodeOutcome is the episode.outcome action. Mark a linking decision correct or incorrect (for tuning).
	ActionEpisodeOutcome = action.NewRef[OutcomeArgs, OutcomeResult]("episode.outcome")
	// ActionEpisodeTune is the episode.tune action. Recompute the linking threshold and the model's guidance from marked decisions.
	ActionEpisodeTune = action.NewRef[action.None, TuningRecord]("episode.tune")
	// ActionThreadShare is the thread.share action. Grant an agent permissions on a thread (and its episodes); the result is the thread's ACL.
	ActionThreadShare = action.NewRef[ShareArgs, access.ACL]("thread.share")
	// ActionThreadRevoke is the thread.revoke action. Remove an agent's access to a thread; the result is the thread's ACL.
	ActionThreadRevoke = action.NewRef[RevokeArgs, access.ACL]("thread.revoke")
	// ActionEpisodeTuning is the episode.tuning action. The linking threshold, the model's prompt versions and past tunings.
	ActionEpisodeTuning = action.NewRef[action.None, *Tuning]("episode.tuning")
)
