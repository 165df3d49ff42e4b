package episodic

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/text"
)

// The algorithmic half of linking: how likely a new thread's first message
// continues an earlier thread, from the words alone. It adds up independent
// pieces of evidence as a noisy-or (each piece closes part of the distance
// to 1), then discounts for evidence against (a different place or subject
// asked about in the same way):
//
//   - content: the message's content words the candidate thread used, over
//     the square root of how many it has (or the share of its names the
//     candidate used: names written mid-sentence, not a sentence's first
//     word);
//   - topic: both are about the same subject (weather, travel, food...),
//     from a small built-in lexicon, said in words they do not share;
//   - continuation cues: the message opens as a follow-up ("Oh, and",
//     "What about", "Also"), which refers to what was just said, so these
//     count fully for the most recent thread only and weaken with the gap
//     (and count half when the cue opens a whole new request);
//   - additive cues: the message ends by adding itself to something said
//     before ("... there too?", "... as well");
//   - dangling references: "it", "that", "both" with nothing in the message
//     for them to refer to;
//   - a follow-up about time alone ("on Thursday?", "next week?");
//   - back-references ("Remember when we talked about...") which reach any
//     age of thread, but only one the message's content matches;
//   - recency: a small prior for the thread just before.

// Evidence weights: each is what that piece alone would score.
const (
	weightContent  = 0.75
	weightTopic    = 0.45
	weightContinue = 0.70
	weightDangling = 0.50
	weightTimeOnly = 0.40
	weightBackRef  = 0.70
	weightRecent   = 0.15
	weightAdditive = 0.40
	// A continuation cue opening a message with newRequestWords or more
	// content words of its own counts newRequestFactor as much.
	newRequestWords  = 3
	newRequestFactor = 0.5
	// Discounts for evidence against.
	entityClashFactor = 0.85 // another place or name of the same subject
	topicClashFactor  = 0.60 // a different subject altogether
	// olderCueFactor: cues that refer to "what we just said" count this much
	// for threads other than the most recent.
	olderCueFactor = 0.5
	// recencyHalfLife: the gap at which recency-dependent evidence halves.
	recencyHalfLife = 8 * time.Hour
)

// Signals is what the scorer found, recorded with each decision so a person
// can see why it scored as it did.
type Signals struct {
	Keywords    []string `json:"keywords"`
	Entities    []string `json:"entities"`
	Topics      []string `json:"topics"`
	Cues        []string `json:"cues"`
	GapMinutes  int      `json:"gap_minutes"`
	Recency     float64  `json:"recency"`
	MostRecent  bool     `json:"most_recent"`
	EntityClash bool     `json:"entity_clash,omitempty"`
	TopicClash  bool     `json:"topic_clash,omitempty"`
}

// CandidateText is what the scorer knows of a candidate thread.
type CandidateText struct {
	Text       string    // its turns (or, once compacted, title, summaries and skills)
	LastActive time.Time // its last activity
	MostRecent bool      // the most recently active of the candidates
}

// Score rates how likely message continues the candidate, in [0, 1].
func Score(message string, cand CandidateText, now time.Time) (float64, Signals) {
	m := analyze(message, true)
	c := analyze(cand.Text, false) // the cues are the message's alone
	gap := max(now.Sub(cand.LastActive), 0)
	recency := math.Exp2(-float64(gap) / float64(recencyHalfLife))
	sig := Signals{GapMinutes: int(gap.Minutes()), Recency: round2(recency), MostRecent: cand.MostRecent}

	shared := intersect(m.terms, c.terms)
	sig.Keywords = shared
	// Content: the message's words the candidate used, over the square root
	// of how many it has (two distinctive words shared in a long message
	// say as much as one in a short one).
	lexical := 0.0
	if len(m.terms) > 0 {
		lexical = min(float64(len(shared))/math.Sqrt(float64(len(m.terms))), 1)
	}
	sig.Entities = intersect(m.entities, c.entities)
	entity := 0.0
	if len(m.names) > 0 {
		entity = float64(len(intersect(m.names, c.names))) / float64(len(m.names))
	}
	content := max(lexical, entity)
	// A shared subject is evidence beyond the shared words only when other
	// words say it: the topics of the words not shared.
	sharedTopics := intersect(topicsOf(without(m.terms, shared)), c.topics)
	sig.Topics = sharedTopics

	cueFactor := 1.0
	if !cand.MostRecent {
		cueFactor = olderCueFactor
	}
	evidence := []float64{weightContent * content, weightRecent * recency * cueFactor}
	if len(sharedTopics) > 0 {
		evidence = append(evidence, weightTopic)
	}
	// A follow-up leans on what was said; a cue opening a whole new
	// request — several words of its own the candidate never used, and no
	// pronoun pointing back ("Oh, and can you order more printer ink?") —
	// says less.
	followUp := m.continuation != "" && (m.pronoun || len(without(m.content(), c.terms)) < newRequestWords)
	if m.continuation != "" {
		sig.Cues = append(sig.Cues, "continuation: "+m.continuation)
		w := weightContinue * cueFactor * (0.4 + 0.6*recency)
		if !followUp {
			w *= newRequestFactor
		}
		evidence = append(evidence, w)
	}
	if m.additive != "" {
		sig.Cues = append(sig.Cues, "additive: "+m.additive)
		evidence = append(evidence, weightAdditive*cueFactor*recency)
	}
	if m.dangling != "" {
		sig.Cues = append(sig.Cues, "reference: "+m.dangling)
		evidence = append(evidence, weightDangling*cueFactor*recency)
	}
	if m.timeOnly {
		sig.Cues = append(sig.Cues, "time follow-up")
		evidence = append(evidence, weightTimeOnly*cueFactor*recency)
	}
	if m.backRef != "" && (content > 0 || len(sharedTopics) > 0) {
		sig.Cues = append(sig.Cues, "back-reference: "+m.backRef)
		evidence = append(evidence, weightBackRef*max(content, 0.5))
	}
	miss := 1.0
	for _, e := range evidence {
		miss *= 1 - min(max(e, 0), 1)
	}
	score := 1 - miss
	switch {
	case len(m.topics) > 0 && len(c.topics) > 0 && len(intersect(m.topics, c.topics)) == 0 && content < 0.5:
		sig.TopicClash = true
		score *= topicClashFactor
	case len(m.names) > 0 && len(c.names) > 0 && len(intersect(m.names, c.names)) == 0:
		// Another place or name asked about the same way is a new topic —
		// unless the message follows up by a cue ("And the Musée d'Orsay?"
		// after the Louvre's opening hours), which asks the same of it: the
		// clash is still recorded (tuning reads it), without the discount.
		sig.EntityClash = true
		if !followUp {
			score *= entityClashFactor
		}
	}
	return round2(score), sig
}

// analysis is what the scorer reads in one text.
type analysis struct {
	terms    []string // content terms (stems), without filler and cue words
	entities []string // normalized entities
	names    []string // entities that name a place, person or thing (not times)
	topics   []string
	// cues (the phrase found, or "")
	continuation, dangling, backRef, additive string
	timeOnly                                  bool
	pronoun                                   bool // a word needing an antecedent, anywhere
}

// content is the message's content terms that are not about time, or all
// of them if it is about time alone.
func (a analysis) content() []string {
	var out []string
	for _, t := range a.terms {
		if !isTimeWord(t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return a.terms
	}
	return out
}

// analyze reads s's terms, entities and topics, and with cues its cue
// phrases too.
func analyze(s string, cues bool) analysis {
	var a analysis
	lower := strings.ToLower(s)
	for _, w := range text.Words(s) {
		if filler[w] {
			continue
		}
		if t := text.Term(w); t != "" && !isNumber(t) && !slices.Contains(a.terms, t) {
			a.terms = append(a.terms, t)
		}
	}
	for _, e := range text.Entities(s) {
		n := text.Normalize(e)
		if n == "" || slices.Contains(a.entities, n) {
			continue
		}
		a.entities = append(a.entities, n)
		if !isTimeWord(n) && !hasDigitRune(n) && isName(s, e) {
			a.names = append(a.names, n)
		}
	}
	a.topics = topicsOf(a.terms)
	if !cues {
		return a
	}
	if m := continuationCue.FindString(lower); m != "" {
		a.continuation = strings.TrimSpace(strings.TrimRight(m, " ,"))
	}
	if m := backReference.FindString(lower); m != "" {
		a.backRef = strings.TrimSpace(m)
	}
	nonTime := 0
	for _, t := range a.terms {
		if !isTimeWord(t) {
			nonTime++
		}
	}
	if m := pluralReference.FindString(lower); m != "" {
		a.dangling = m
	} else if m := pronounReference.FindString(lower); m != "" {
		a.pronoun = true
		if nonTime == 0 {
			a.dangling = m
		}
	}
	a.timeOnly = len(a.terms) > 0 && nonTime == 0
	if m := additiveCue.FindStringSubmatch(lower); m != nil {
		a.additive = m[1]
	}
	return a
}

// isName reports whether entity e of s names a place, person or thing: it
// is written capitalized, and not only as a sentence's first word (which
// text.Entities takes for a name: "Draft an email", "Recommend a book"),
// unless it is several words or an acronym.
func isName(s, e string) bool {
	r, _ := utf8.DecodeRuneInString(e)
	if !unicode.IsUpper(r) {
		return false // an action ("adopt"), not a name
	}
	if strings.ContainsRune(e, ' ') || e == strings.ToUpper(e) {
		return true
	}
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], e)
		if j < 0 {
			return false
		}
		if !atSentenceStart(s, i+j) {
			return true
		}
		i += j + len(e)
	}
	return false
}

// atSentenceStart reports whether position i of s begins a sentence.
func atSentenceStart(s string, i int) bool {
	before := strings.TrimRightFunc(s[:i], func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("\"'(“‘", r) })
	if before == "" {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(before)
	return strings.ContainsRune(".!?:;\n-*…", r)
}

func topicsOf(terms []string) []string {
	out := []string{}
	for _, t := range terms {
		if topic, ok := topicOf[t]; ok && !slices.Contains(out, topic) {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out
}

func isNumber(t string) bool { return strings.Trim(t, "0123456789") == "" }

var (
	// continuationCue: openings that follow up on what was just said.
	continuationCue = regexp.MustCompile(`^\s*(oh,?\s+and|and also|and|also|plus|what about|how about|and what about|one more thing|another (question|thing)|btw|by the way|besides|then what|what else|same (question|for))\b[\s,]*`)
	// backReference: the message points at an earlier conversation.
	backReference = regexp.MustCompile(`\b(remember (when|what|that|the)|we (talked|spoke|discussed|chatted) about|you (said|mentioned|told me|suggested)|as (i|we) (said|discussed)|last time|earlier you|going back to|back to (the|our|what)|following up on|about (that|the) .* (from|we) )`)
	// pronounReference: a word that needs an antecedent, when the message
	// has nothing of its own for it to point at.
	pronounReference = regexp.MustCompile(`\b(it|that|this|there|then|they|them|these|those|the same|again)\b`)
	// additiveCue: a message that ends by adding itself to something said
	// before ("... there too?", "... as well").
	additiveCue = regexp.MustCompile(`\b(too|as well|also)\s*[?.!]*\s*$`)
	// pluralReference: words that point back at several earlier things.
	pluralReference = regexp.MustCompile(`\b(both|either|neither|each of them|all of them|the two|those two|them all)\b`)
)

// filler: conversational words that carry no content of their own (question
// words, greetings, the verbs of cues), so that "What's the weather?" and
// "Remember when we talked about the weather?" share exactly "weather".
var filler = wordSet(`what what's whats how how's when where who why which oh ah hey hi hello ok okay thanks thank
please me i i'm im i've i'd you you're we we're us my our your it it's is are was were be been do does did can could would
will should shall may might about also and plus then remember talk talked talking spoke discuss discussed mention mentioned
said say tell told know think guess like want need wonder question thing things anything something else just really
again still same btw way one more another both either neither tell let let's lets get got give
help make find show write draft recommend suggest good best better great nice new some any lot bit time`)

// timeWords: words about when, which a follow-up may consist of alone.
var timeWords = wordSet(`monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
today tonight tomorrow yesterday morning afternoon evening night noon midnight week weekend weekday month year day days
next last this coming following later soon now hour hours minute minutes january february march april may june july august
september october november december jan feb mar apr jun jul aug sep sept oct nov dec`)

func isTimeWord(s string) bool {
	for _, w := range strings.Fields(s) {
		if !timeWords[w] && !timeWords[text.Term(w)] && !timeStems[w] {
			return false
		}
	}
	return s != ""
}

// timeStems are the stems of the time words (terms are stems).
var timeStems = func() map[string]bool {
	m := map[string]bool{}
	for w := range timeWords {
		if t := text.Term(w); t != "" {
			m[t] = true
		}
	}
	return m
}()

// topics: a small lexicon of everyday subjects, by word stem. It lets "the
// best time to visit" continue "a trip to Paris" though they share no word,
// and tells a flight from the weather.
var topics = map[string]string{
	"weather":   "weather forecast rain raining rainy snow snowing sunny sun cloudy temperature temperatures degrees hot cold warm humid humidity wind windy storm storms umbrella climate fahrenheit celsius heat",
	"travel":    "trip travel travelling traveling flight flights fly flying airport airline plane hotel hotels visit visiting vacation holiday tour tourist booking itinerary passport luggage train trains journey destination sightseeing",
	"food":      "food restaurant restaurants dinner lunch breakfast recipe recipes cook cooking meal meals eat eating dish dishes menu vegetarian vegan pizza pasta sushi cuisine bake baking",
	"health":    "doctor doctors health sick ill fever headache medicine medication appointment hospital symptoms pain dentist exercise workout gym diet sleep",
	"money":     "money budget pay payment payments bill bills bank account invoice salary tax taxes price prices cost costs expense expenses loan mortgage savings invest investment stock stocks",
	"work":      "work job meeting meetings project projects deadline deadlines boss colleague colleagues office report reports presentation client clients manager team launch release sprint",
	"shopping":  "buy buying shop shopping store stores order orders delivery gift gifts purchase sale discount",
	"tech":      "computer laptop phone app software bug bugs code coding server deploy deployment database password wifi internet email install update",
	"sports":    "game games match score football soccer basketball tennis baseball hockey season player players league tournament",
	"music":     "music song songs album band concert playlist guitar piano singer",
	"movies":    "movie movies film films show shows series watch watching cinema actor actress episode netflix",
	"family":    "family kids kid children child son daughter mom dad mother father parents wife husband birthday wedding anniversary",
	"home":      "house home apartment rent landlord repair plumber cleaning furniture garden kitchen",
	"education": "school class classes course courses exam exams homework study studying university college teacher lesson grade grades",
	"transport": "car cars drive driving traffic parking bus subway taxi uber commute",
	"pets":      "dog dogs cat cats pet pets vet puppy kitten",
}

// topicOf maps each word stem of the lexicon to its topic. A stem in two
// topics would make scores depend on map order; TestTopicLexicon forbids
// it, and the loop runs in sorted order so that even then the first wins.
var topicOf = func() map[string]string {
	m := map[string]string{}
	names := make([]string, 0, len(topics))
	for topic := range topics {
		names = append(names, topic)
	}
	slices.Sort(names)
	for _, topic := range names {
		for _, w := range strings.Fields(topics[topic]) {
			if t := text.Term(w); t != "" {
				if _, taken := m[t]; !taken {
					m[t] = topic
				}
			}
		}
	}
	return m
}()

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// without returns the elements of a not in b.
func without(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func intersect(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func hasDigitRune(s string) bool { return strings.ContainsAny(s, "0123456789") }

func round2(f float64) float64 { return math.Round(f*100) / 100 }
