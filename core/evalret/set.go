// Package evalret measures retrieval: it reads an evaluation set
// (conversations with dated sessions, and questions whose evidence is some
// of their turns; docs/eval.md), loads the conversations into a scratch
// in-memory engine, asks every question of a retriever and scores where
// the evidence came: recall@1/5/10, MRR and nDCG@10 per category and
// split, and the search's median latency. It never touches a user's data:
// the engine it loads is its own, in memory, and gone when it ends.
package evalret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/input"
)

// MaxFile is the largest evaluation file read, in bytes (64 MiB: a public
// benchmark of a few thousand questions over long conversations fits).
const MaxFile = 64 << 20

// The question categories.
const (
	SingleHop  = "single-hop"
	MultiHop   = "multi-hop"
	Temporal   = "temporal"
	OpenDomain = "open-domain"
)

// Categories are the question categories, in the order results list them.
var Categories = []string{SingleHop, MultiHop, Temporal, OpenDomain}

// The splits a question may be in. A question that names none is in Dev.
const (
	Dev     = "dev"
	Heldout = "heldout"
)

// Set is an evaluation set: conversations, and questions about them.
type Set struct {
	// Name says what the set is (optional).
	Name string `json:"name,omitempty"`
	// Conversations are the conversations the questions are about.
	Conversations []Conversation `json:"conversations" arg:"required"`
	// Questions are asked of a retriever, one at a time.
	Questions []Question `json:"questions" arg:"required"`
}

// Conversation is a conversation in sessions.
type Conversation struct {
	// ID names the conversation (it becomes the history conversation's
	// name in the scratch engine).
	ID string `json:"id" arg:"required"`
	// Speakers are the people talking, the first one first: the first is
	// written as history's "user", the others as "assistant".
	Speakers []string `json:"speakers" arg:"required"`
	// Sessions are the conversation's sittings, in order.
	Sessions []Session `json:"sessions" arg:"required"`
}

// Session is one sitting of a conversation, at one date and time.
type Session struct {
	ID string `json:"id" arg:"required"`
	// DateTime is when the session took place (RFC 3339); every turn of
	// the session is written at that time, one second apart.
	DateTime time.Time `json:"date_time" arg:"required"`
	Turns    []Turn    `json:"turns" arg:"required"`
}

// Turn is one thing a speaker said.
type Turn struct {
	// ID is unique in the whole file: evidence names turns by it.
	ID      string `json:"id" arg:"required"`
	Speaker string `json:"speaker" arg:"required"`
	Text    string `json:"text" arg:"required"`
	// ImageCaption describes an image shared with the turn (optional); it
	// is written after the text as "[image: CAPTION]".
	ImageCaption string `json:"image_caption,omitempty"`
}

// Question is asked of a retriever about one conversation.
type Question struct {
	ID           string `json:"id" arg:"required"`
	Conversation string `json:"conversation" arg:"required"`
	Text         string `json:"text" arg:"required"`
	// Category is single-hop, multi-hop, temporal or open-domain.
	Category string `json:"category" arg:"required"`
	// Evidence are the ids of the turns that answer the question.
	Evidence []string `json:"evidence" arg:"required"`
	// Answer is the answer, for a reader (retrieval ignores it).
	Answer string `json:"answer,omitempty"`
	// Split is dev (the default) or heldout.
	Split string `json:"split,omitempty"`
}

// SplitOf is the question's split: Dev unless it names Heldout.
func (q Question) SplitOf() string {
	if q.Split == "" {
		return Dev
	}
	return q.Split
}

// maxProblems is how many problems an error about a bad file lists.
const maxProblems = 10

// ReadFile reads and checks an evaluation set from the file path (through
// core/input: a regular file of at most MaxFile bytes; errors name the
// file, never quote it).
func ReadFile(path string) (*Set, error) {
	data, err := input.ReadFile(path, MaxFile)
	if err != nil {
		return nil, errs.New(errs.Validation, "file: %v", err).With("field", "file")
	}
	set, err := Decode(data)
	if err != nil {
		e := errs.As(err)
		return nil, errs.New(e.Kind, "file %s: %s", path, e.Message).With("field", "file")
	}
	return set, nil
}

// Decode reads an evaluation set from JSON and checks it whole: every
// problem found (up to ten) is named by its place in the file, with what
// to do about it. The set it returns is sound: ids unique, every
// question's evidence turns of its own conversation.
func Decode(data []byte) (*Set, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errs.New(errs.Validation, "the file is empty; give a JSON object with conversations and questions (docs/eval.md)")
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if se, ok := err.(*json.SyntaxError); ok {
			line, col := position(data, se.Offset)
			return nil, errs.New(errs.Parse, "not valid JSON at line %d, column %d", line, col)
		}
		return nil, errs.New(errs.Parse, "not valid JSON")
	}
	if data[0] != '{' {
		return nil, errs.New(errs.Validation, "the file holds %s, not an evaluation set (a JSON object with conversations and questions; docs/eval.md)", action.JSONKind(data))
	}
	if where, err := input.CheckDepth(data, input.MaxDepth); err != nil {
		return nil, errs.New(errs.Validation, "%s is nested more than %d levels deep", where, input.MaxDepth)
	}
	var set Set
	if err := action.DecodeStrict(data, &set); err != nil {
		e := errs.As(err)
		msg := strings.TrimPrefix(strings.ReplaceAll(e.Message, "args.", ""), "args: ")
		return nil, errs.New(e.Kind, "%s", input.Redact(msg))
	}
	if err := set.check(); err != nil {
		return nil, err
	}
	return &set, nil
}

// position is the line and column of byte offset off in data.
func position(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := 0; i < len(data) && int64(i) < off-1; i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// problems collects what is wrong with a set, up to maxProblems.
type problems struct {
	list []string
	more int
}

func (p *problems) add(format string, args ...any) {
	if len(p.list) == maxProblems {
		p.more++
		return
	}
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	msg := strings.Join(p.list, "; ")
	if p.more > 0 {
		msg += fmt.Sprintf("; and %d more", p.more)
	}
	if len(p.list) > 1 || p.more > 0 {
		msg = fmt.Sprintf("%d problems: %s", len(p.list)+p.more, msg)
	}
	return errs.New(errs.Validation, "%s", msg)
}

// maxID is the longest id accepted (a conversation id becomes a history
// conversation's name, which is at most 200 bytes).
const maxID = 200

// checkID says what is wrong with an id ("" when nothing is).
func checkID(id string) string {
	switch {
	case strings.TrimSpace(id) == "":
		return "is empty; give every one an id"
	case strings.TrimSpace(id) != id:
		// history trims a conversation's name: " c" would be "c".
		return "starts or ends with a space; remove it"
	case len(id) > maxID:
		return fmt.Sprintf("is %d bytes long; at most %d", len(id), maxID)
	case !utf8.ValidString(id):
		return "is not valid UTF-8"
	case strings.IndexFunc(id, unicode.IsControl) >= 0 || strings.Contains(id, "/"):
		return "must not contain '/' or control characters"
	}
	return ""
}

// check finds what the JSON's shape cannot say is wrong.
func (s *Set) check() error {
	var p problems
	if len(s.Conversations) == 0 {
		p.add("conversations: none; give at least one")
	}
	if len(s.Questions) == 0 {
		p.add("questions: none; give at least one")
	}
	convOf := map[string]string{} // turn id → conversation id
	convs := map[string]bool{}
	for i, c := range s.Conversations {
		at := fmt.Sprintf("conversations[%d]", i)
		if why := checkID(c.ID); why != "" {
			p.add("%s.id %s", at, why)
		} else if convs[c.ID] {
			p.add("%s.id %s is taken by an earlier conversation; give each its own id", at, show(c.ID))
		}
		convs[c.ID] = true
		speakers := map[string]bool{}
		for j, sp := range c.Speakers {
			if strings.TrimSpace(sp) == "" {
				p.add("%s.speakers[%d] is empty; name every speaker", at, j)
			}
			speakers[sp] = true
		}
		if len(c.Speakers) == 0 {
			p.add("%s.speakers: none; name the people talking", at)
		}
		if len(c.Sessions) == 0 {
			p.add("%s.sessions: none; give at least one", at)
		}
		sessions := map[string]bool{}
		for j, ses := range c.Sessions {
			sat := fmt.Sprintf("%s.sessions[%d]", at, j)
			if why := checkID(ses.ID); why != "" {
				p.add("%s.id %s", sat, why)
			} else if sessions[ses.ID] {
				p.add("%s.id %s is taken by an earlier session of the conversation; give each its own id", sat, show(ses.ID))
			}
			sessions[ses.ID] = true
			if ses.DateTime.IsZero() {
				p.add("%s.date_time is missing; write when the session took place, like \"2023-05-08T13:56:00Z\"", sat)
			}
			for k, t := range ses.Turns {
				tat := fmt.Sprintf("%s.turns[%d]", sat, k)
				if why := checkID(t.ID); why != "" {
					p.add("%s.id %s", tat, why)
				} else if other, taken := convOf[t.ID]; taken {
					p.add("%s.id %s is a duplicate (an earlier turn, in conversation %s, has it); turn ids must be unique in the file", tat, show(t.ID), show(other))
				} else {
					convOf[t.ID] = c.ID
				}
				if !speakers[t.Speaker] {
					p.add("%s.speaker %s is not one of the conversation's speakers; add it to %s.speakers or fix the name", tat, show(t.Speaker), at)
				}
				if strings.TrimSpace(t.Text) == "" && strings.TrimSpace(t.ImageCaption) == "" {
					p.add("%s.text is empty; give what was said (or an image_caption)", tat)
				}
			}
		}
	}
	qids := map[string]bool{}
	for i, q := range s.Questions {
		at := fmt.Sprintf("questions[%d]", i)
		if why := checkID(q.ID); why != "" {
			p.add("%s.id %s", at, why)
		} else if qids[q.ID] {
			p.add("%s.id %s is taken by an earlier question; give each its own id", at, show(q.ID))
		}
		qids[q.ID] = true
		if !convs[q.Conversation] {
			p.add("%s.conversation %s is no conversation of the file; name one of conversations[].id", at, show(q.Conversation))
		}
		if strings.TrimSpace(q.Text) == "" {
			p.add("%s.text is empty; write the question", at)
		}
		if !isCategory(q.Category) {
			p.add("%s.category %s is unknown; use %s", at, show(q.Category), strings.Join(Categories, ", "))
		}
		if q.Split != "" && q.Split != Dev && q.Split != Heldout {
			p.add("%s.split %s is unknown; use dev or heldout (or leave it out: dev)", at, show(q.Split))
		}
		if len(q.Evidence) == 0 {
			p.add("%s.evidence: none; name the ids of the turns that answer it", at)
		}
		for j, ev := range q.Evidence {
			conv, ok := convOf[ev]
			switch {
			case !ok:
				p.add("%s.evidence[%d] %s is no turn of the file; name a turn's id", at, j, show(ev))
			case conv != q.Conversation && convs[q.Conversation]:
				p.add("%s.evidence[%d] %s is a turn of conversation %s, not of %s; evidence comes from the question's own conversation", at, j, show(ev), show(conv), show(q.Conversation))
			}
		}
	}
	return p.err()
}

// plainValue is what a value of the file may look like and still be
// repeated in an error: an id or a name, never a line of a secret file.
var plainValue = regexp.MustCompile(`^[A-Za-z0-9_.:' -]{1,64}$`)

// show quotes a value of the file for an error, or "…" when it does not
// look like an id (core/input: errors never quote what a file holds).
func show(s string) string {
	if plainValue.MatchString(s) {
		return strconv.Quote(s)
	}
	return `"…"`
}

func isCategory(c string) bool {
	for _, k := range Categories {
		if c == k {
			return true
		}
	}
	return false
}
