package text

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// Line is one utterance to fold into a summary.
type Line struct {
	Index   int    `json:"index"`
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

// Summary is a running extractive summary: what each folded utterance said,
// compressed only as far as the token limit demands. Compression goes in
// steps, each losing as little as it can, oldest parts first: keep the
// sentences that carry entities or decide something; then keep the one
// sentence that says most, whole, and name the entities it leaves out;
// then merge neighbouring parts already reduced to entities; then reduce a
// part to its entities; then drop the oldest entities. Names, numbers,
// dates and actions are what survives longest, and the newest survive
// longest of all.
type Summary struct {
	Parts []Part `json:"parts"`
}

// Part is what the summary says about one utterance, or about several
// merged ones.
type Part struct {
	// Spans are the indexes of the utterances the part stands for, as
	// ranges (a merged part may stand for thousands).
	Spans    []Span   `json:"spans"`
	Speaker  string   `json:"speaker"`
	Text     string   `json:"text"`
	Entities []string `json:"entities"`
	// Level is how far the part is compressed: key sentences (0), its
	// lead sentence (1), its entities (2), merged with its neighbours (3).
	// Every level reads as whole sentences.
	Level int `json:"level"`
	// Tokens counts the part's line as Render writes it (0: not yet
	// counted), so that compressing recounts only what changed.
	Tokens int `json:"tokens,omitempty"`
}

// Span is a range of utterance indexes, From to To inclusive; in JSON
// [from, to].
type Span struct{ From, To int }

// MarshalJSON writes [from, to].
func (s Span) MarshalJSON() ([]byte, error) {
	return []byte("[" + strconv.Itoa(s.From) + "," + strconv.Itoa(s.To) + "]"), nil
}

// UnmarshalJSON reads [from, to].
func (s *Span) UnmarshalJSON(b []byte) error {
	var pair [2]int
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	s.From, s.To = pair[0], pair[1]
	return nil
}

// addSpans merges b into a (both in order, as parts are), joining ranges
// that touch.
func addSpans(a, b []Span) []Span {
	out := slices.Clone(a)
	for _, sp := range b {
		if n := len(out); n > 0 && sp.From <= out[n-1].To+1 && sp.From >= out[n-1].From {
			out[n-1].To = max(out[n-1].To, sp.To)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Counter counts tokens (llm.CountTokens; a parameter so that this package
// needs no model package).
type Counter func(string) int

// actionCue marks a sentence that decides or asks for something.
var actionCue = regexp.MustCompile(`(?i)\b(decid|agree|approv|confirm|will|must|should|need|plan|schedul|deadline|due|budget|cost|price|remember|todo|to-do|action|assign|deliver|ship|launch|send|book|call|email|meet)`)

// Add folds utterances into the summary (uncompressed: Render compresses).
func (s *Summary) Add(lines ...Line) {
	for _, l := range lines {
		text := strings.Join(strings.Fields(l.Text), " ")
		if text == "" {
			continue
		}
		entities := Entities(text)
		s.Parts = append(s.Parts, Part{
			Spans: []Span{{l.Index, l.Index}}, Speaker: l.Speaker, Text: keySentences(text, entities), Entities: entities,
		})
	}
}

// AddText folds in a summary written elsewhere (a model's), as one part.
func (s *Summary) AddText(indexes []int, text string) {
	var spans []Span
	for _, i := range indexes {
		spans = addSpans(spans, []Span{{i, i}})
	}
	s.Parts = append(s.Parts, Part{Spans: spans, Speaker: "summary", Text: text, Entities: Entities(text)})
}

// Covers lists the utterance indexes the summary stands for, in order.
func (s *Summary) Covers() []int {
	var out []int
	for _, sp := range s.Spans() {
		for i := sp.From; i <= sp.To; i++ {
			out = append(out, i)
		}
	}
	return out
}

// Spans are the ranges of utterance indexes the summary stands for, in
// order, as few as can be.
func (s *Summary) Spans() []Span {
	var all []Span
	for _, p := range s.Parts {
		all = append(all, p.Spans...)
	}
	slices.SortFunc(all, func(a, b Span) int { return a.From - b.From })
	var out []Span
	for _, sp := range all {
		if n := len(out); n > 0 && sp.From <= out[n-1].To+1 {
			out[n-1].To = max(out[n-1].To, sp.To)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Covered is how many utterances the summary stands for.
func (s *Summary) Covered() int {
	n := 0
	for _, sp := range s.Spans() {
		n += sp.To - sp.From + 1
	}
	return n
}

// Compress compresses the summary, oldest parts first, until its rendering
// is at most limit tokens, and returns the rendering and its token count.
// It keeps what it compressed, so the next Add starts from there.
//
// It steers by an estimate — the sum of the parts' lines, counted once each
// and again only when they change, and one token per line break — and
// counts the whole rendering only when the estimate comes near the limit.
func (s *Summary) Compress(limit int, count Counter) (string, int) {
	for {
		est, lines := s.estimate(count)
		if est <= limit+lines/2+2 {
			text := s.Render()
			if n := count(text); n <= limit {
				return text, n
			}
		}
		if !s.compressStep(est-limit, count) {
			text := cutToTokens(s.Render(), limit, count)
			return text, count(text)
		}
	}
}

// estimate is about how many tokens Render's text has, and how many lines.
func (s *Summary) estimate(count Counter) (tokens, lines int) {
	for i := range s.Parts {
		p := &s.Parts[i]
		if p.Text == "" {
			continue
		}
		if p.Tokens == 0 {
			p.Tokens = count(p.line())
		}
		tokens += p.Tokens
		lines++
	}
	return tokens + max(lines-1, 0), lines
}

// Render is the summary as text, one line per part:
// "[3] user: We need a venue by Friday." / "[0-2] earlier: Mentioned
// Acme and $40,000." A part with nothing left to say ("Thanks!") takes no
// line.
func (s *Summary) Render() string {
	var b strings.Builder
	for _, p := range s.Parts {
		if p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.line())
	}
	return b.String()
}

func (p *Part) line() string {
	return "[" + spanLabel(p.Spans) + "] " + p.Speaker + ": " + p.Text
}

// compressStep makes the summary one step shorter; false when it cannot.
func (s *Summary) compressStep(excess int, count Counter) bool {
	// The oldest part still in its key sentences keeps only its lead one.
	for i := range s.Parts {
		if s.Parts[i].Level == 0 {
			s.Parts[i].compress()
			return true
		}
	}
	// Two neighbours both down to entities merge into one list: that loses
	// only who said what.
	if s.mergeOldestPair() {
		return true
	}
	// The oldest part down to its lead sentence becomes its entities.
	for i := range s.Parts {
		if s.Parts[i].Level == 1 {
			s.Parts[i].compress()
			return true
		}
	}
	if s.mergeOldestPair() {
		return true
	}
	// One list of entities left: drop its oldest entities, about as many
	// as make up the excess (at least one, never the last).
	for i := range s.Parts {
		if p := &s.Parts[i]; len(p.Entities) > 1 {
			drop, freed := 0, 0
			for drop < len(p.Entities)-1 && (drop == 0 || freed < excess) {
				freed += count(p.Entities[drop]) + 1 // and its ", "
				drop++
			}
			p.Entities = p.Entities[drop:]
			p.Text = entitySentence("Mentioned", p.Entities)
			p.Tokens = 0
			return true
		}
	}
	return false
}

// mergeOldestPair merges the oldest two neighbouring parts that are both
// reduced to entities (parts with nothing to say merge with anything).
func (s *Summary) mergeOldestPair() bool {
	for i := 0; i+1 < len(s.Parts); i++ {
		a, b := s.Parts[i], s.Parts[i+1]
		if !(a.Level >= 2 || a.Text == "") || !(b.Level >= 2 || b.Text == "") {
			continue
		}
		merged := Part{Spans: addSpans(a.Spans, b.Spans), Speaker: "earlier", Level: 3}
		merged.Entities = dedupe(append(slices.Clone(a.Entities), b.Entities...))
		merged.Text = entitySentence("Mentioned", merged.Entities)
		s.Parts = slices.Replace(s.Parts, i, i+2, merged)
		return true
	}
	return false
}

// dedupe keeps each entity once, and drops one that is a run of words of
// another ("Maria" beside "Maria Lopez"), in order, the later copy kept.
func dedupe(entities []string) []string {
	norms := make([]string, len(entities))
	last := make(map[string]int, len(entities))
	inner := map[string]bool{} // the runs of words inside each entity
	for i, e := range entities {
		n := Normalize(e)
		norms[i], last[n] = n, i
		if words := strings.Fields(n); len(words) > 1 {
			for a := range words {
				for b := a + 1; b <= len(words); b++ {
					if b-a < len(words) {
						inner[strings.Join(words[a:b], " ")] = true
					}
				}
			}
		}
	}
	out := make([]string, 0, len(entities))
	for i, e := range entities {
		if n := norms[i]; last[n] == i && !inner[n] {
			out = append(out, e)
		}
	}
	return out
}

// compress moves a part one level down.
func (p *Part) compress() {
	p.Tokens = 0
	switch p.Level {
	case 0:
		// The one sentence that says most, whole: a summary that reads
		// as sentences, not as a telegram ("budget?").
		p.Text = LeadSentence(p.Text, p.Entities)
		if missing := missingEntities(p.Entities, p.Text); len(missing) > 0 && p.Text != "" {
			p.Text += " " + entitySentence("Also mentioned", missing)
		}
	case 1:
		p.Entities = dedupe(p.Entities)
		p.Text = entitySentence("Mentioned", p.Entities)
	}
	p.Level++
}

// keySentences keeps the sentences of text that carry one of its entities
// or an action cue (all of a short text; at least the first sentence).
func keySentences(text string, entities []string) string {
	sentences := splitSentences(text)
	if len(sentences) <= 2 {
		return text
	}
	var keep []string
	for _, s := range sentences {
		if slices.ContainsFunc(entities, func(e string) bool { return strings.Contains(s, e) }) || actionCue.MatchString(s) {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		keep = sentences[:1]
	}
	return strings.Join(keep, " ")
}

// LeadSentence is the one sentence of text that says most, kept whole:
// the one with the most of entities in it, then one that decides or asks
// (an action cue, a question), the earliest on a tie. A greeting or thanks
// alone is never chosen while another sentence says something. Nothing to
// say at all ("Thanks!") is "".
func LeadSentence(text string, entities []string) string {
	best, bestScore := "", -1
	for _, s := range splitSentences(text) {
		if SaysNothing(s) {
			continue
		}
		score := 0
		for _, e := range entities {
			if strings.Contains(s, e) {
				score += 2
			}
		}
		if actionCue.MatchString(s) || strings.HasSuffix(strings.TrimRight(s, `"')]}”’`), "?") {
			score++
		}
		if score > bestScore {
			best, bestScore = s, score
		}
	}
	return best
}

// SaysNothing reports whether a sentence is only greetings, thanks and
// stop words ("Hi!", "Thanks, that's all for now.").
func SaysNothing(s string) bool {
	for _, f := range strings.Fields(s) {
		w := strings.ReplaceAll(strings.ToLower(strings.Trim(f, `.,;:!?"()[]{}“”‘’'`)), "’", "'")
		if w != "" && !fillers[w] && !english.IsStopWord(w) {
			return false
		}
	}
	return true
}

// entitySentence lists entities as a sentence: "Mentioned Maria Lopez,
// Lisbon and $40,000." A possessive is written as the name it is of
// ("Maria's" → "Maria"), and every name keeps its case.
func entitySentence(lead string, entities []string) string {
	if len(entities) == 0 {
		return ""
	}
	names := make([]string, 0, len(entities))
	for _, e := range entities {
		for _, suffix := range []string{"'s", "’s"} {
			if t, ok := strings.CutSuffix(e, suffix); ok && t != "" {
				e = t
			}
		}
		if !slices.Contains(names, e) {
			names = append(names, e)
		}
	}
	list := names[0]
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return lead + " " + list + "."
}

// keptStopWords are stop words a telegraphic text keeps: negations and the
// words that order or bound things, without which it would say otherwise.
var keptStopWords = map[string]bool{
	"no": true, "not": true, "nor": true, "never": true, "none": true, "without": true,
	"before": true, "after": true, "until": true, "over": true, "under": true, "between": true,
	"against": true, "only": true, "more": true, "most": true, "few": true, "off": true,
}

// fillers are words a telegraphic text drops although they are not stop
// words: greetings, thanks, softeners and the contractions of stop words.
var fillers = map[string]bool{
	"hi": true, "hello": true, "hey": true, "thanks": true, "thank": true, "please": true, "ok": true, "okay": true,
	"sure": true, "great": true, "perfect": true, "lovely": true, "cool": true, "well": true, "oh": true, "just": true,
	"really": true, "also": true, "actually": true, "maybe": true, "perhaps": true, "right": true, "alright": true,
	"i'm": true, "i'll": true, "i've": true, "i'd": true, "you're": true, "you'll": true, "you've": true, "you'd": true,
	"we're": true, "we'll": true, "we've": true, "we'd": true, "they're": true, "they'll": true, "it's": true,
	"that's": true, "there's": true, "here's": true, "what's": true, "let's": true, "he's": true, "she's": true,
	"it'll": true, "that'll": true, "can": true, "could": true, "would": true, "shall": true, "may": true, "might": true,
}

// Telegraphic writes text as a telegram: without stop words and fillers, but
// keeping negations, every capitalised word not at a sentence start, every
// word with a digit or symbol, and each sentence's end.
func Telegraphic(text string) string {
	fields := strings.Fields(text)
	out := make([]string, 0, len(fields))
	start := true // at the start of a sentence
	for _, f := range fields {
		core := strings.ToLower(strings.Trim(f, `.,;:!?"()[]{}“”‘’'`))
		core = strings.ReplaceAll(core, "’", "'")
		end := strings.TrimRight(f, `"')]}”’`)
		ends := strings.HasSuffix(end, ".") || strings.HasSuffix(end, "!") || strings.HasSuffix(end, "?")
		capital := f != "" && unicode.IsUpper([]rune(strings.TrimLeft(f, `"'([{“‘`) + " ")[0]) &&
			core != "i" && !strings.HasPrefix(core, "i'")
		drop := core == "" && !strings.ContainsAny(f, "&+=<>/%$€£¥#@*~") ||
			(english.IsStopWord(core) && !keptStopWords[core] || fillers[core]) && (!capital || start)
		if !drop {
			w := strings.TrimRight(f, ",;:")
			out = append(out, w)
		} else if ends && len(out) > 0 && !strings.ContainsAny(out[len(out)-1][len(out[len(out)-1])-1:], ".!?") {
			out[len(out)-1] += end[len(end)-1:]
		}
		// A sentence starts after a sentence end, and still after the
		// words dropped from its beginning.
		start = ends || drop && start
	}
	return strings.Join(out, " ")
}

func missingEntities(entities []string, text string) []string {
	var out []string
	k := newKeeper(text)
	for _, e := range entities {
		if !k.keeps(e) {
			out = append(out, e)
		}
	}
	return out
}

// abbreviations end in a full stop that does not end a sentence.
var abbreviations = map[string]bool{
	"dr": true, "mr": true, "mrs": true, "ms": true, "mx": true, "prof": true, "st": true, "mt": true, "jr": true, "sr": true,
	"vs": true, "etc": true, "e.g": true, "i.e": true, "inc": true, "ltd": true, "co": true, "corp": true, "no": true,
	"approx": true, "ave": true, "dept": true, "est": true, "fig": true, "gen": true, "gov": true, "sen": true, "rep": true,
	"capt": true, "lt": true, "sgt": true, "rev": true, "fr": true, "jan": true, "feb": true, "mar": true, "apr": true,
	"jun": true, "jul": true, "aug": true, "sep": true, "sept": true, "oct": true, "nov": true, "dec": true, "a.m": true, "p.m": true,
}

// Sentences are the sentences of text, whole, as a summary keeps them
// (see splitSentences).
func Sentences(text string) []string { return splitSentences(text) }

// splitSentences splits text at sentence ends: '.', '!' or '?' (with any
// closing quotes or brackets) before a space or the end, except after an
// abbreviation or an initial ("Dr.", "e.g.", "J."), and at line breaks. A
// full stop inside a word or number ("$89.99", "v2.4.0", "main.go") ends
// nothing.
func splitSentences(text string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	begin := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' {
			add(text[begin:i])
			begin = i + 1
			continue
		}
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		for j < len(text) && strings.IndexByte(".!?\"')]}", text[j]) >= 0 {
			j++
		}
		for _, closing := range []string{"”", "’", "…"} {
			for strings.HasPrefix(text[j:], closing) {
				j += len(closing)
			}
		}
		if j < len(text) && text[j] != ' ' && text[j] != '\n' && text[j] != '\t' && text[j] != '\r' {
			i = j - 1
			continue
		}
		if c == '.' && j == i+1 {
			w := text[begin:i]
			if k := strings.LastIndexAny(w, " \t(\"'"); k >= 0 {
				w = w[k+1:]
			}
			lw := strings.ToLower(w)
			if abbreviations[lw] || len([]rune(w)) == 1 && unicode.IsUpper([]rune(w)[0]) {
				i = j - 1
				continue
			}
		}
		add(text[begin:j])
		begin = j
		i = j - 1
	}
	add(text[begin:])
	return out
}

// cutToTokens is the last resort: the longest prefix within limit tokens,
// cut at a word.
func cutToTokens(text string, limit int, count Counter) string {
	words := strings.Fields(text)
	lo, hi := 0, len(words)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if count(strings.Join(words[:mid], " ")) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strings.Join(words[:lo], " ")
}

// spanLabel writes spans compactly: "3", "0-2", "0-2,5".
func spanLabel(spans []Span) string {
	var b strings.Builder
	for i, sp := range spans {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sp.From))
		if sp.To != sp.From {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sp.To))
		}
	}
	return b.String()
}
