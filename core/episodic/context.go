package episodic

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Working memory from threads (seed 4): on an explicit channel the user
// chose the thread, so the context is that thread alone; on an implicit one
// engram guessed, so it pulls in every thread linked to the current one and
// says that it is continuing. Compacted episodes come in as their summaries
// and skills; the rest as the questions asked and the answers given.

// Context is a thread's working memory.
type Context struct {
	ThreadID string `json:"thread_id"`
	Channel  string `json:"channel"`
	Explicit bool   `json:"explicit"`
	// Text is the prompt: what the assistant is told.
	Text string `json:"text"`
	// Recap is the one line a reply can open with ("You were asking about
	// weather in New York").
	Recap string `json:"recap"`
	Topic string `json:"topic"`
	// Threads are the threads drawn on, earliest first; the current one last.
	Threads           []ContextThread `json:"threads"`
	PreviousQuestions []QA            `json:"previous_questions"`
	// Said is what the user said that asked nothing ("I'm planning
	// Maria's party"), with the reply: the previous questions are
	// questions only.
	Said            []QA   `json:"said,omitempty"`
	CurrentQuestion string `json:"current_question"`
	// Continuing: an earlier thread is pulled in; GapMinutes is the break
	// between it and the current thread.
	Continuing bool `json:"continuing"`
	GapMinutes int  `json:"gap_minutes,omitempty"`
	// Summaries and Skills come from the compacted episodes drawn on.
	Summaries []string `json:"summaries"`
	Skills    []Skill  `json:"skills"`
	// older: more questions were asked than listed, so the text recaps the
	// summaries too.
	older bool
}

// ContextThread is one thread drawn on.
type ContextThread struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Current bool   `json:"current"`
	Turns   int    `json:"turns"`
	// Compacted episodes it contributed as summaries.
	Compacted int `json:"compacted_episodes"`
}

// QA is a question asked and the answer given (empty if none yet).
type QA struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// maxQuestions: the most previous questions a context lists (the latest).
const maxQuestions = 10

// ContextFor assembles the working memory of a thread. input, if not empty,
// is the message about to be answered; otherwise the thread's last user
// message is. channel, if not empty, overrides the thread's last channel.
//
// principal must be allowed to read the thread; the linked threads it may not read
// are left out, as if unlinked.
func (e *Episodic) ContextFor(ctx context.Context, principal, threadID, channel, input string) (Context, error) {
	if threadID == "" {
		return Context{}, errNoThread()
	}
	if channel != "" && !IsExplicit(channel) && !isImplicit(channel) {
		return Context{}, kit.Validation("channel", "unknown channel %q; use web, app, sms, whatsapp or voice", channel)
	}
	e.compactor.Settle(ctx)
	var c Context
	err := e.env.Store.View(func(tx *storage.Tx) error {
		if _, err := loadThread(tx, threadID); err != nil {
			return err
		}
		if err := e.authorize(tx, principal, threadID, access.Read); err != nil {
			return err
		}
		var err error
		c, err = assemble(tx, principal, threadID, channel, input)
		return err
	})
	return c, err
}

func isImplicit(ch string) bool {
	for _, c := range ImplicitChannels {
		if c == ch {
			return true
		}
	}
	return false
}

func assemble(tx *storage.Tx, principal, threadID, channel, input string) (Context, error) {
	cur, err := loadThread(tx, threadID)
	if err != nil {
		return Context{}, err
	}
	turns, err := turnsOf(tx, cur.ID, true)
	if err != nil {
		return Context{}, err
	}
	if channel == "" {
		channel = "web"
		if len(turns) > 0 {
			channel = turns[len(turns)-1].Channel
		} else if len(cur.Channels) > 0 {
			channel = cur.Channels[len(cur.Channels)-1]
		}
	}
	c := Context{ThreadID: cur.ID, Channel: channel, Explicit: IsExplicit(channel), Summaries: []string{}, Skills: []Skill{}, PreviousQuestions: []QA{}}
	// The current question: the input, or the thread's last user message.
	if input == "" {
		for i := len(turns) - 1; i >= 0; i-- {
			if turns[i].Speaker == "user" {
				input = turns[i].Text
				turns = turns[:i]
				break
			}
		}
	} else if n := len(turns); n > 0 && turns[n-1].Speaker == "user" && sameText(turns[n-1].Text, input) {
		// The input was routed into the thread before the turn started
		// (chat.send does so): it is the current question, not a previous one.
		turns = turns[:n-1]
	}
	c.CurrentQuestion = question(input)
	threads := []*Thread{}
	if !c.Explicit {
		// Every earlier thread linked to this one, directly or through a
		// cross-thread episode it shares (a chain of follow-ups).
		seen := map[string]bool{cur.ID: true}
		add := func(id string) error {
			if seen[id] {
				return nil
			}
			seen[id] = true
			if ok, err := canRead(tx, principal, id); err != nil || !ok {
				return err
			}
			t, err := loadThread(tx, id)
			if err == nil && t.CreatedAt.Before(cur.CreatedAt) {
				threads = append(threads, t)
			}
			return err
		}
		for _, id := range cur.LinkedThreads {
			if err := add(id); err != nil {
				return Context{}, err
			}
		}
		for _, xid := range cur.CrossThreadEpisodes {
			x, err := loadCross(tx, xid)
			if err != nil {
				return Context{}, err
			}
			for _, id := range x.LinkedThreads {
				if err := add(id); err != nil {
					return Context{}, err
				}
			}
		}
		sortByCreation(threads)
	}
	threads = append(threads, cur)
	var qas []QA
	var firstMessage string // the first thread's first user message
	var summaries []string
	var skills []Skill
	for _, t := range threads {
		ct := ContextThread{ID: t.ID, Title: t.Title, Current: t.ID == cur.ID}
		for _, id := range t.Episodes {
			ep, err := loadEpisode(tx, id)
			if err != nil {
				return Context{}, err
			}
			if ep.Status == EpisodeCompacted && ep.Summaries != nil {
				ct.Compacted++
				summaries = append(summaries, ep.Summaries.Meso)
				skills = append(skills, ep.Skills...)
			}
		}
		all := turns
		if t.ID != cur.ID {
			if all, err = turnsOf(tx, t.ID, true); err != nil {
				return Context{}, err
			}
		}
		ct.Turns = len(all)
		if t == threads[0] {
			firstMessage = firstUserText(all, input)
		}
		qas = append(qas, questionsOf(all)...)
		c.Threads = append(c.Threads, ct)
	}
	// The latest questions, with their answers, say most; what came before
	// them comes in as the compacted episodes' summaries, shown only when
	// some questions did not fit.
	c.Summaries, c.Skills = append(c.Summaries, summaries...), append(c.Skills, skills...)
	c.older = len(qas) > maxQuestions
	if c.older {
		qas = qas[len(qas)-maxQuestions:]
	}
	for _, qa := range qas {
		if isQuestion(qa.Question) {
			qa.Question = withoutGreeting(qa.Question)
			c.PreviousQuestions = append(c.PreviousQuestions, qa)
		} else {
			c.Said = append(c.Said, qa)
		}
	}
	first := threads[0]
	c.Topic = discussedTopic(first.Title, firstMessage)
	c.Recap = "You were asking about " + c.Topic
	if len(threads) > 1 {
		prev := threads[len(threads)-2]
		c.Continuing = true
		c.GapMinutes = int(max(cur.CreatedAt.Sub(prev.LastActivityBefore(cur.CreatedAt)), 0) / time.Minute)
	}
	c.Text = c.render()
	return c, nil
}

// LastActivityBefore is the thread's last activity before t (its last
// activity, if it was before t; else when it was created): a thread linked
// to a later one may have gone on since.
func (t *Thread) LastActivityBefore(at time.Time) time.Time {
	if t.LastActivityAt.Before(at) {
		return t.LastActivityAt
	}
	return t.CreatedAt
}

func (c *Context) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "You were discussing %s.\n", c.Topic)
	if c.older && len(c.Summaries) > 0 {
		b.WriteString("Earlier, in summary:\n")
		for _, s := range c.Summaries {
			for _, line := range strings.Split(s, "\n") {
				b.WriteString("  " + line + "\n")
			}
		}
	}
	var learned []Skill
	for _, s := range c.Skills {
		// Answers are already in the questions listed, unless older.
		if s.From != "answer" || c.older {
			learned = append(learned, s)
		}
	}
	if len(learned) > 0 {
		b.WriteString("What you learned:\n")
		for _, s := range learned {
			fmt.Fprintf(&b, "- (%s) %s\n", s.Kind, s.Text)
		}
	}
	if len(c.Said) > 0 {
		b.WriteString("What you said:\n")
		for _, qa := range c.Said {
			if qa.Answer != "" {
				fmt.Fprintf(&b, "- %s (%s)\n", qa.Question, qa.Answer)
			} else {
				fmt.Fprintf(&b, "- %s\n", qa.Question)
			}
		}
	}
	if len(c.PreviousQuestions) > 0 {
		b.WriteString("Previous questions:\n")
		for _, qa := range c.PreviousQuestions {
			if qa.Answer != "" {
				fmt.Fprintf(&b, "- %s (%s)\n", qa.Question, qa.Answer)
			} else {
				fmt.Fprintf(&b, "- %s\n", qa.Question)
			}
		}
	}
	if c.CurrentQuestion != "" {
		fmt.Fprintf(&b, "\nCurrent question: %s", c.CurrentQuestion)
	}
	if c.Continuing {
		fmt.Fprintf(&b, "\n(Continuing from previous thread after %s break)", gapText(time.Duration(c.GapMinutes)*time.Minute))
	}
	return strings.TrimRight(b.String(), "\n")
}

// firstUserText is the first user message of turns with content (the one
// a made-up title comes from), else the first one, or else input (the
// thread's first message is the one about to be answered).
func firstUserText(turns []*Turn, input string) string {
	first := ""
	for _, t := range turns {
		if t.Speaker != "user" {
			continue
		}
		// The one the title was made from: a greeting says nothing.
		if titleFrom(t.Text) != "" {
			return t.Text
		}
		if first == "" {
			first = t.Text
		}
	}
	if first == "" || titleFrom(input) != "" {
		return input // (the message about to be answered may be the first with content)
	}
	return first
}

// questionsOf pairs each user message with the answer that followed it.
func questionsOf(turns []*Turn) []QA {
	var out []QA
	for i, u := range turns {
		if u.Speaker != "user" {
			continue
		}
		qa := QA{Question: strings.Join(strings.Fields(u.Text), " ")}
		if i+1 < len(turns) && turns[i+1].Speaker == "assistant" {
			qa.Answer = shortAnswer(turns[i+1].Text)
		}
		out = append(out, qa)
	}
	return out
}

// shortAnswer is an answer as a parenthesis: short ones whole (without the
// final full stop), long ones by their first sentence, cut.
func shortAnswer(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 60 {
		s = firstSentence(s)
		if utf8.RuneCountInString(s) > 60 {
			s = string([]rune(s)[:59]) + "…"
		}
	}
	return strings.TrimRight(s, ".")
}

// cueOpening: the follow-up words a question may open with, which the
// context drops ("Oh, and what is it on Thursday?" asks "What is it on
// Thursday?").
var cueOpening = regexp.MustCompile(`(?i)^\s*(oh,?\s+and|and also|and|also|plus|btw|by the way|so)[\s,]+`)

func question(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	rest := cueOpening.ReplaceAllString(s, "")
	if rest == "" {
		return s
	}
	return upperFirst(rest)
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// lowerFirst lowers a title's first letter unless the second is upper case
// too (an acronym) — "Weather in New York" → "weather in New York".
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r2, _ := utf8.DecodeRuneInString(s[n:]); unicode.IsUpper(r2) {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}

func sortByCreation(ts []*Thread) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].CreatedAt.Before(ts[j-1].CreatedAt); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// provider is the episodic part of turn.start: the context of the turn's
// thread (given, or — on an implicit channel — the thread a message now
// would continue).
type provider struct{ e *Episodic }

func (p *provider) Name() string { return "episodic" }

func (p *provider) Context(ctx context.Context, start kit.TurnStart) (kit.Section, error) {
	id := start.ThreadID
	if id == "" && isImplicit(start.Channel) {
		err := p.e.env.Store.View(func(tx *storage.Tx) error {
			r, err := p.e.route(tx, start.Principal, MessageRequest{Channel: start.Channel, Speaker: "user"}, start.At)
			if err == nil && r.thread != nil {
				id = r.thread.ID
			}
			return err
		})
		if err != nil {
			return kit.Section{}, err
		}
	}
	if id == "" {
		return kit.Section{}, nil
	}
	c, err := p.e.ContextFor(ctx, start.Principal, id, start.Channel, start.Input)
	if err != nil {
		return kit.Section{}, p.e.failed(ctx, action.Call{Principal: start.Principal, Turn: start.TurnID}, err)
	}
	if len(c.PreviousQuestions) == 0 && len(c.Said) == 0 && len(c.Summaries) == 0 && !c.Continuing {
		// A thread's first message: nothing to remember yet.
		return kit.Section{Notes: []kit.Note{{Kind: "episodic.context", Message: fmt.Sprintf("thread %s: nothing earlier to draw on", id)}}}, nil
	}
	return kit.Section{Data: c, Notes: []kit.Note{{Kind: "episodic.context",
		Message: fmt.Sprintf("thread %s: %d thread(s), %d previous question(s), continuing=%v", id, len(c.Threads), len(c.PreviousQuestions), c.Continuing)}}}, nil
}

func (p *provider) Commit(ctx context.Context, tx *kit.Txn, end kit.TurnEnd) (any, error) {
	if len(end.Updates) == 0 || string(end.Updates) == "null" {
		return nil, nil
	}
	return nil, kit.Validation("updates.episodic", "threads take messages through thread.message, not turn.end")
}

// sameText reports whether a and b are the same message, but for spacing.
func sameText(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}
