package episodic

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/text"
	"github.com/kljensen/snowball/english"
)

// What a context says was discussed and asked reads as whole sentences
// (issue 14): "You were discussing Maria's birthday party in Lisbon.", not
// "You were discussing hi, I'm planning…"; a name keeps its case; and the
// previous questions are the questions asked, not every message.

// greeting opens a message without saying anything ("Hi,", "Hello there!").
var greeting = regexp.MustCompile(`(?i)^\s*(hi|hello|hey|good (morning|afternoon|evening)|thanks|thank you|ok(ay)?|so)( there| again| all| team)?\b[\s,!.:;—-]*`)

// statementOpening: the words a request or plan opens with before its
// subject ("I'm planning Maria's party" is about "Maria's party").
var statementOpening = regexp.MustCompile(`(?i)^(i'm|i am|we're|we are)\s+(planning|organi[sz]ing|working on|looking for|thinking about|preparing)\s+|` +
	`^(i|we)\s+(need|want|would like|'d like)\s+(help with\s+|to (plan|organi[sz]e|book|find|sort out|talk about|discuss)\s+)?|` +
	`^(can|could|would) you (please )?help (me|us) (with|plan|organi[sz]e|find|book)\s+|^help (me|us) (with|plan|find|book)\s+|` +
	`^let's (talk about|discuss|plan)\s+|^(tell me|talk to me) about\s+`)

// maxTopicWords: the most words of a topic.
const maxTopicWords = 12

// discussedTopic is what a thread was about, as the noun phrase "You were
// discussing …" ends with. A title made from the thread's first message
// is made again from that message, without its greeting or opening words;
// a title given by someone is kept. first is the thread's first user
// message ("" if none).
func discussedTopic(title, first string) string {
	title = strings.TrimSuffix(title, " (cont.)")
	subject := title
	if first != "" && title == titleFrom(first) {
		subject = subjectOf(first)
	}
	subject = strings.TrimRight(subject, ".?!…,;: ")
	if subject == "" {
		subject = strings.TrimRight(title, ".?!…,;: ")
	}
	if commonWordFirst(subject, first) {
		return lowerFirst(subject)
	}
	return subject
}

// subjectOf is the subject of a message's first sentence that says
// something: without a greeting, a follow-up's cue, a question's or a
// request's opening words, and cut at a word to a few words.
func subjectOf(msg string) string {
	var s string
	for _, sentence := range text.Sentences(strings.Join(strings.Fields(msg), " ")) {
		if !text.SaysNothing(sentence) {
			s = sentence
			break
		}
	}
	s = greeting.ReplaceAllString(s, "")
	s = cueOpening.ReplaceAllString(s, "")
	s = questionOpening.ReplaceAllString(s, "")
	s = statementOpening.ReplaceAllString(s, "")
	s = strings.TrimRight(s, ".?!…,;: ")
	if words := strings.Fields(s); len(words) > maxTopicWords {
		words = words[:maxTopicWords]
		// Not ending on a word that leads on ("in", "the").
		for len(words) > 1 && english.IsStopWord(strings.ToLower(words[len(words)-1])) {
			words = words[:len(words)-1]
		}
		s = strings.Join(words, " ")
	}
	return s
}

// commonWordFirst reports whether the subject's first word is an ordinary
// word, capitalised only because it opens the title: a stop word, or a
// word the first message writes in lower case. A name, written with its
// capital wherever it is, keeps it ("Lisbon venue", "Maria's party").
func commonWordFirst(subject, first string) bool {
	word, _, _ := strings.Cut(subject, " ")
	word = strings.Trim(word, `.,;:!?"()[]{}“”‘’'`)
	if word == "" {
		return false
	}
	if r, n := utf8.DecodeRuneInString(word); !unicode.IsUpper(r) {
		return true
	} else if r2, _ := utf8.DecodeRuneInString(word[n:]); unicode.IsUpper(r2) {
		return false // an acronym
	}
	lower := strings.ToLower(word)
	if english.IsStopWord(lower) {
		return true
	}
	for _, w := range strings.Fields(first) {
		if strings.Trim(w, `.,;:!?"()[]{}“”‘’'`) == lower {
			return true
		}
	}
	return false
}

// isQuestion reports whether a message asks something: its last sentence
// ends in a question mark.
func isQuestion(msg string) bool {
	all := text.Sentences(msg)
	if len(all) == 0 {
		return false
	}
	last := strings.TrimRight(all[len(all)-1], `"')]}”’`)
	return strings.HasSuffix(last, "?")
}

// withoutGreeting is a message without the sentences at its start that say
// nothing ("Hi! What's the budget?" asks "What's the budget?").
func withoutGreeting(msg string) string {
	all := text.Sentences(msg)
	for len(all) > 1 && text.SaysNothing(all[0]) {
		all = all[1:]
	}
	return strings.Join(all, " ")
}
