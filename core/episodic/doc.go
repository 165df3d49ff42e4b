// Package episodic is engram's episodic memory (seed 003): conversation
// threads that start and continue by channel and inactivity, semantic links
// between a new thread and earlier ones (an algorithmic score and a model's
// judgement, run in parallel), cross-thread episodes, working-memory context
// that pulls linked threads in, and compaction of ended episodes into
// summaries and skills.
package episodic
