package episodic

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Inferred outcomes (seed 3.3, issue 14): engram reads whether a linking
// decision was right from what the user does next, as a person marking it
// would. When a user's message starts a thread with decisions, the
// decisions wait for that user's next message; that message, if it comes
// within InferWindow, is read once, the first of these that holds:
//
//   - it goes to another thread (the user picked another one, or started
//     one): each LINK is incorrect (signal "thread_switch"); it says
//     nothing about a DON'T_LINK;
//   - it says the link was wrong ("that's not what I meant"): each LINK
//     is incorrect (signal "correction");
//   - it refers back to an earlier conversation ("didn't we talk about
//     this?", "as I said before"): each LINK is correct, or when nothing
//     linked, the strongest DON'T_LINK is incorrect (signal
//     "back_reference");
//   - it changes the subject ("on another note", "different question:"):
//     each LINK is incorrect, the strongest DON'T_LINK correct (signal
//     "topic_switch");
//   - otherwise it goes on in the thread: each LINK is correct, and the
//     strongest DON'T_LINK too (a fresh conversation, as decided; signal
//     "continued").
//
// Only the strongest DON'T_LINK is inferred: it is the one nearest the
// threshold, and "a fresh conversation" says little about the weak ones.
// A correction wins over a back-reference in the same message. The
// phrases are English (straight or curly apostrophes), and a message in
// another language is read as "continued" or "thread_switch" only.

// InferWindow: a message later than this after the decisions is a new
// sitting, and says nothing about them.
const InferWindow = 10 * time.Minute

// Signals an inferred outcome is read from.
const (
	SignalContinued     = "continued"
	SignalCorrection    = "correction"
	SignalBackReference = "back_reference"
	SignalTopicSwitch   = "topic_switch"
	SignalThreadSwitch  = "thread_switch"
)

var (
	// correctionPhrase: the user says the context engram brought was not
	// what they meant.
	correctionPhrase = regexp.MustCompile(`(?i)\b((that['’]?s )?not what i (meant|mean|was (asking|talking) about)|that['’]?s not it\b|i didn['’]?t mean|i meant something else|(that['’]?s|it['’]?s|this is) (a )?different (thing|question|subject|topic)|wrong (thread|conversation|topic)|(has|had) nothing to do with|not related to (that|this|what))`)
	// confirmingReference: the user points back at an earlier conversation.
	confirmingReference = regexp.MustCompile(`(?i)\b(didn['’]?t we (talk|speak|chat) about|did we not (talk|speak) about|we (already )?(talked|spoke|chatted) about|as (i|we) (said|mentioned|discussed)|like (i|we) (said|mentioned|discussed)|(i|we) (said|mentioned|discussed) (this |that |it )?(before|earlier|last time)|remember (when|what|that)|you said (earlier|before|last time)|earlier you said|from (last time|before|earlier|our last))`)
	// topicSwitch: the user turns to something else.
	topicSwitch = regexp.MustCompile(`(?i)\b(on (another|a different) (note|topic|subject)|(changing|change of|change the) (the )?subject|(different|unrelated) (question|topic|subject)|new (topic|subject)|something (else|different) entirely|unrelated, but)`)
)

// InferredOutcome is an outcome engram read from what the user did after a
// linking decision, recorded beside the outcome a person marks.
type InferredOutcome struct {
	// Outcome: correct or incorrect.
	Outcome string `json:"outcome"`
	// Signal: continued, correction, back_reference, topic_switch or
	// thread_switch.
	Signal string `json:"signal"`
	// Evidence is the phrase found, or for thread_switch the thread the
	// user went to.
	Evidence string `json:"evidence,omitempty"`
	// ThreadID and Turn are the message it was read from.
	ThreadID string    `json:"thread_id"`
	Turn     int       `json:"turn"`
	At       time.Time `json:"at"`
}

// awaiting is a principal's latest new thread whose decisions wait for the
// principal's next message.
type awaiting struct {
	ThreadID string    `json:"thread_id"`
	At       time.Time `json:"at"`
	// Decisions, strongest first.
	Decisions []string `json:"decisions"`
}

func awaitKey(principal string) []byte {
	return storage.Key(storage.PrefixEpisodic, "await", principal)
}

func ownerOf(principal string) string {
	if principal == "" {
		return access.LegacyOwner
	}
	return principal
}

// inferOutcomes reads the principal's message (turn, now in thread t) for
// the outcomes of the decisions waiting on it, records them, and makes the
// decisions of a new thread wait in their turn.
func (e *Episodic) inferOutcomes(tx *kit.Txn, call action.Call, req MessageRequest, t *Thread, turn *Turn, res *MessageResult) error {
	if req.Speaker != "user" {
		return nil // only the user's own doing says anything
	}
	key := awaitKey(ownerOf(call.Principal))
	var w awaiting
	err := tx.GetJSON(key, &w)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := tx.Delete(key); err != nil {
			return err
		}
		if turn.At.Sub(w.At) <= InferWindow {
			if err := e.infer(tx, call, w, req.Text, t, turn); err != nil {
				return err
			}
		}
	}
	if res.NewThread && len(res.Decisions) > 0 {
		next := awaiting{ThreadID: t.ID, At: turn.At}
		for _, d := range res.Decisions {
			next.Decisions = append(next.Decisions, d.ID)
		}
		return tx.SetJSON(key, next)
	}
	return nil
}

// infer records what text (the next message, now turn of t) says about
// the decisions w waits with.
func (e *Episodic) infer(tx *kit.Txn, call action.Call, w awaiting, text string, t *Thread, turn *Turn) error {
	var ds []*Decision
	for _, id := range w.Decisions {
		d, err := loadDecision(tx.Tx, id)
		if errs.KindOf(err) == errs.NotFound {
			continue // nothing to learn about: never fail the message for it
		}
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	signal, evidence := SignalThreadSwitch, t.ID
	if t.ID == w.ThreadID {
		signal, evidence = readSignal(text)
	}
	linked := false
	for _, d := range ds {
		linked = linked || d.Decision == Link
	}
	strongestNot := true // the first DON'T_LINK (decisions are strongest first)
	for _, d := range ds {
		var outcome string
		if d.Decision == Link {
			switch signal {
			case SignalContinued, SignalBackReference:
				outcome = OutcomeCorrect
			default:
				outcome = OutcomeIncorrect
			}
		} else if strongestNot {
			strongestNot = false
			switch {
			case signal == SignalBackReference && !linked:
				outcome = OutcomeIncorrect
			case signal == SignalContinued, signal == SignalTopicSwitch:
				outcome = OutcomeCorrect
			}
		}
		if outcome == "" {
			continue
		}
		in := InferredOutcome{Outcome: outcome, Signal: signal, Evidence: evidence, ThreadID: t.ID, Turn: turn.Number, At: turn.At}
		d.Inferred = append(d.Inferred, in)
		if err := tx.SetJSON(decisionKey(d.ID), d); err != nil {
			return err
		}
		msg := fmt.Sprintf("linking decision %s (%s, %s and %s) inferred %s from the next message (%s)", d.ID, d.Decision, d.ThreadID, d.Candidate, outcome, signal)
		if _, err := tx.TraceAbout(call, aboutDecision(d.ID), "episode.outcome", msg,
			outcomeTrace{Algorithmic: d.Algorithmic, Decision: d.Decision, DecisionID: d.ID, LLM: d.LLM, Outcome: outcome, Inferred: true, Signal: signal}); err != nil {
			return err
		}
		EventOutcomeInferred.Publish(tx, decisionAudience(tx.Tx, d), *d)
	}
	return nil
}

// readSignal is what a message in the same thread says about the link:
// its signal, and the phrase it was read from ("" for continued).
func readSignal(text string) (signal, evidence string) {
	for _, p := range []struct {
		signal string
		re     *regexp.Regexp
	}{{SignalCorrection, correctionPhrase}, {SignalBackReference, confirmingReference}, {SignalTopicSwitch, topicSwitch}} {
		if m := p.re.FindString(text); m != "" {
			return p.signal, m
		}
	}
	return SignalContinued, ""
}
