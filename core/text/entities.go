package text

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The key entities of a text are what a summary must not lose: names,
// numbers and amounts, dates and times, identifiers, and the actions
// decided or asked for. Entities finds them with patterns and
// capitalisation, without a model.
var (
	month       = `(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)`
	weekday     = `(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)`
	datePattern = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?\b|\b` + month + `\.? \d{1,2}(?:st|nd|rd|th)?(?:,? \d{4})?\b|\b\d{1,2}(?:st|nd|rd|th)? (?:of )?` + month + `(?: \d{4})?\b|\b` + weekday + `\b|\b\d{1,2}(?::\d{2})? ?(?:am|pm|AM|PM)\b|\b\d{1,2}:\d{2}\b|\bQ[1-4](?: \d{4})?\b`)
	// A quantity is a number with its unit or what it counts ("50 mg",
	// "12 hours", "5-7 business days", "six weeks", "120 guests").
	quantityPattern = regexp.MustCompile(`(?i)\b(?:\d[\d,]*(?:\.\d+)?(?:\s?[-–]\s?\d[\d,]*(?:\.\d+)?)?|` + numberWords + `)[\s-]?(?:business |working |calendar )?` + units + `\b`)
	// Versions, file names and code identifiers ("v2.4.0", "ratelimit.go",
	// "Limiter.Allow", "refill()").
	codePattern    = regexp.MustCompile(`\bv?\d+(?:\.\d+){2,3}\b|\bv\d+(?:\.\d+)?\b|\b\w[\w-]*\.(?:go|py|js|ts|tsx|jsx|rs|java|kt|c|h|cc|cpp|hpp|rb|php|swift|md|json|ya?ml|toml|ini|txt|csv|pdf|docx?|xlsx?|pptx?|html?|css|sh|sql|proto|lock|log|png|jpe?g|svg|zip)\b|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\)|\b[A-Z]\w*(?:\.[A-Z]\w*)+\b|\b[A-Za-z_]\w*\(\)`)
	moneyPattern   = regexp.MustCompile(`[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|K|m|M|bn|million|billion|thousand))?\b|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars|euros)\b`)
	numberPattern  = regexp.MustCompile(`\b\d[\d,]*(?:\.\d+)?%?`)
	emailPattern   = regexp.MustCompile(`\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b`)
	urlPattern     = regexp.MustCompile(`\bhttps?://[^\s)]+`)
	idPattern      = regexp.MustCompile(`\b[A-Za-z]+(?:[_-][A-Za-z0-9]+)*[_-]?\d+[A-Za-z0-9_-]*\b|\b[a-z]+_[a-z0-9_]+\b|#\w+|@\w+`)
	acronymPattern = regexp.MustCompile(`\b[A-Z][A-Z0-9&]{1,}\b`)
	// A name: capitalised words, perhaps after a title ("Dr. Elena
	// Petrova", "St. Mary's Hospital"), perhaps ending in a letter
	// ("Building C", "Plan B").
	// (It begins at a word's start — regexp's \b knows only ASCII words,
	// so names.starts checks it: "Émile", not "Phone" in "iPhone".)
	namePattern = regexp.MustCompile(`(?:(?:Dr|Mr|Mrs|Ms|Mx|Prof|St|Mt|Sen|Gov|Rep|Capt|Lt|Sgt|Rev|Fr)\.? )?\p{Lu}[\p{L}'’]*[\p{Ll}][\p{L}'’]*(?:[ -](?:of |the |de |da |del |van |von |la |le )?\p{Lu}[\p{L}'’]*[\p{L}'’])*(?: [A-HJ-Z]\b)?`)
	// Cues after which comes the action decided on or asked for.
	actionPattern = regexp.MustCompile(`(?i)\b(?:will|shall|must|should|need(?:s)? to|going to|plan(?:s|ned)? to|decided to|agreed to|promised to|let's|lets|please|remember to|don't forget to|ask(?:ed|s)? (?:\w+ )?to|tell (?:\w+ )?to|want(?:s)? to|has to|have to)\s+(?:also\s+|then\s+|first\s+)?([a-z][a-z'-]+)`)
)

const (
	numberWords = `(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|hundred|a hundred|a thousand|a dozen|dozens of|hundreds of|thousands of)`
	units       = `(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|months?|years?|quarters?|sprints?|` +
		`mg|mcg|g|kg|lbs?|pounds|oz|ml|l|liters?|litres?|km|mi|miles?|m|cm|mm|ft|feet|inch(?:es)?|meters?|metres?|sq ft|` +
		`ms|µs|ns|kb|mb|gb|tb|kbps|mbps|gbps|ghz|mhz|kw|kwh|°c|°f|degrees|percent|` +
		`people|persons|guests|attendees|users|customers|members|employees|engineers|seats|rooms|beds|tickets|units|items|pieces|` +
		`copies|pages|words|tokens|requests|calls|emails|orders|licen[cs]es|servers|nodes|instances|points|votes|boxes|bottles|` +
		`pills|tablets|doses|times|slots|stores|regions|countries|cities|flights|floors|stars|steps|reps|sets|laps)`
)

// commonOpeners are words that are capitalised only because they start a
// sentence; alone they are not names.
var commonOpeners = map[string]bool{
	"hi": true, "hello": true, "hey": true, "thanks": true, "thank": true, "yes": true, "no": true, "ok": true,
	"okay": true, "sure": true, "great": true, "please": true, "also": true, "and": true, "but": true, "so": true,
	"then": true, "let": true, "let's": true, "lets": true, "i'm": true, "i'll": true, "we'll": true, "we're": true,
	"it's": true, "that's": true, "there's": true, "here's": true, "what's": true, "can": true, "could": true,
	"would": true, "will": true, "should": true, "shall": true, "must": true, "might": true, "did": true, "do": true, "does": true, "is": true, "are": true,
	"was": true, "were": true, "have": true, "has": true, "had": true, "good": true, "well": true, "oh": true,
	"right": true, "done": true, "sounds": true, "perfect": true, "got": true, "noted": true, "understood": true,
	"absolutely": true, "certainly": true, "maybe": true, "perhaps": true, "actually": true, "remember": true,
	"note": true, "next": true, "first": true, "finally": true, "today": true, "tomorrow": true, "yesterday": true,
	"meanwhile": true, "however": true, "because": true, "since": true, "after": true, "before": true, "once": true,
	"if": true, "when": true, "where": true, "why": true, "how": true, "what": true, "which": true, "who": true,
	"all": true, "any": true, "each": true, "every": true, "my": true, "our": true, "your": true, "their": true,
	"his": true, "her": true, "its": true, "this": true, "that": true, "these": true, "those": true, "there": true,
	"here": true, "now": true, "just": true, "only": true, "not": true, "don't": true, "can't": true, "won't": true,
	"i": true, "we": true, "you": true, "they": true, "he": true, "she": true, "it": true, "a": true, "an": true, "the": true,
	"in": true, "on": true, "at": true, "for": true, "with": true, "by": true, "from": true, "to": true, "of": true,
	"as": true, "or": true, "nor": true, "yet": true, "still": true, "even": true, "anyway": true, "alright": true,
	"i'd": true, "i've": true, "we've": true, "you're": true, "you'll": true, "they're": true, "he's": true, "she's": true,
	"agreed": true, "exactly": true, "indeed": true, "fine": true, "cool": true, "nice": true, "wow": true,
	// Imperatives and other ordinary words that often open a sentence.
	"keep": true, "make": true, "take": true, "give": true, "get": true, "see": true, "look": true, "check": true,
	"call": true, "add": true, "pay": true, "book": true, "reserve": true, "remind": true, "ask": true, "tell": true,
	"find": true, "use": true, "try": true, "start": true, "stop": true, "move": true, "put": true, "set": true,
	"bring": true, "buy": true, "order": true, "review": true, "update": true, "send": true, "both": true,
	"either": true, "neither": true, "one": true, "two": true, "three": true, "some": true, "many": true, "much": true,
	"most": true, "more": true, "less": true, "few": true, "several": true, "other": true, "another": true,
	"same": true, "such": true, "very": true, "really": true, "happy": true, "sorry": true, "welcome": true,
	"hope": true, "glad": true, "looks": true, "seems": true, "also,": true, "again": true, "otherwise": true,
}

// Entities returns the key entities of s, each once, in order of first
// appearance, as written (use Normalize to compare them).
func Entities(s string) []string { return entities(s, newScan(s).matches) }

// entities is Entities with the matcher given: find returns the matches of
// a pattern in s as FindAllStringIndex would (with its submatches).
func entities(s string, find func(p *pattern) [][]int) []string {
	var out []string
	seen := map[string]bool{}
	add := func(e string) {
		e = strings.TrimSpace(strings.TrimRight(e, ".,;:!?"))
		key := Normalize(e)
		if key == "" || seen[key] {
			return
		}
		seen[key] = true
		out = append(out, e)
	}
	covered := make([]bool, len(s)) // bytes already claimed by a longer entity
	claim := func(p *pattern) {
		for _, m := range find(p) {
			if slices.Contains(covered[m[0]:m[1]], true) {
				continue
			}
			for i := m[0]; i < m[1]; i++ {
				covered[i] = true
			}
			add(s[m[0]:m[1]])
		}
	}
	for _, p := range []*pattern{urls, emails, dates, money, code, quantities, ids} {
		claim(p)
	}
	for _, m := range find(names) {
		if slices.Contains(covered[m[0]:m[1]], true) {
			continue
		}
		name := s[m[0]:m[1]]
		// "Hello Maria" → "Maria", "I'm Maria Lopez" → "Maria Lopez",
		// "Thanks" → nothing.
		for {
			first, rest, _ := strings.Cut(name, " ")
			if !commonOpeners[strings.ToLower(first)] {
				break
			}
			name = strings.TrimSpace(rest)
		}
		single := !strings.ContainsAny(name, " -")
		if name != "" && !(single && sentenceStart(s, m[0]) && looksLikeWord(name)) {
			add(name)
		}
		for i := m[0]; i < m[1]; i++ {
			covered[i] = true
		}
	}
	claim(acronyms)
	claim(numbers)
	for _, m := range find(actions) {
		if verb := strings.ToLower(s[m[2]:m[3]]); !notAnAction(verb) {
			add(verb)
		}
	}
	return out
}

// A pattern is an entity's regular expression, and what its matches can
// begin with, so that it is tried only where a match may begin (most
// patterns have no literal prefix, and running them over the whole text
// costs tens of microseconds each).
type pattern struct {
	re       *regexp.Regexp
	anchored *regexp.Regexp
	// starts reports whether a match may begin at position i of the scan.
	starts func(sc *scan, i int) bool
	// match, if set, is the pattern written by hand: the end of its match
	// at i, or -1 (for a pattern too large for regexp to run fast).
	match func(s string, i int) int
}

func newPattern(re *regexp.Regexp, starts func(sc *scan, i int) bool) *pattern {
	return &pattern{re: re, anchored: regexp.MustCompile(`^(?:` + re.String() + `)`), starts: starts}
}

var (
	urls   = newPattern(urlPattern, func(sc *scan, i int) bool { return sc.wordStart(i) && strings.HasPrefix(sc.s[i:], "http") })
	emails = newPattern(emailPattern, func(sc *scan, i int) bool {
		return sc.wordStart(i) && strings.IndexByte(sc.token(i), '@') > 0
	})
	dates = newPattern(datePattern, func(sc *scan, i int) bool {
		if !sc.wordStart(i) {
			return false
		}
		c := sc.s[i]
		return isDigit(c) || c == 'Q' && i+1 < len(sc.s) && isDigit(sc.s[i+1]) || calendarWords[strings.ToLower(sc.word(i))]
	})
	money = newPattern(moneyPattern, func(sc *scan, i int) bool {
		if strings.HasPrefix(sc.s[i:], "$") || strings.HasPrefix(sc.s[i:], "€") || strings.HasPrefix(sc.s[i:], "£") || strings.HasPrefix(sc.s[i:], "¥") {
			return true
		}
		return sc.wordStart(i) && isDigit(sc.s[i]) && sc.currencyWords
	})
	code = newPattern(codePattern, func(sc *scan, i int) bool {
		if !sc.wordStart(i) {
			return false
		}
		t := sc.token(i)
		return strings.ContainsAny(t, ".(") || sc.s[i] == 'v' && len(t) > 1 && isDigit(t[1])
	})
	quantities = &pattern{re: quantityPattern, match: matchQuantity, starts: func(sc *scan, i int) bool {
		return sc.wordStart(i) && (isDigit(sc.s[i]) || strings.IndexByte("otfsenhadOTFSENHAD", sc.s[i]) >= 0)
	}}
	ids = newPattern(idPattern, func(sc *scan, i int) bool {
		if c := sc.s[i]; c == '#' || c == '@' {
			return true
		}
		return sc.wordStart(i) && strings.ContainsAny(sc.token(i), "0123456789_")
	})
	names    = newPattern(namePattern, func(sc *scan, i int) bool { return sc.nameStart(i) })
	acronyms = newPattern(acronymPattern, func(sc *scan, i int) bool {
		return sc.wordStart(i) && isUpper(sc.s[i]) && i+1 < len(sc.s) && (isUpper(sc.s[i+1]) || isDigit(sc.s[i+1]) || sc.s[i+1] == '&')
	})
	numbers = newPattern(numberPattern, func(sc *scan, i int) bool { return sc.wordStart(i) && isDigit(sc.s[i]) })
	actions = newPattern(actionPattern, func(sc *scan, i int) bool {
		return sc.wordStart(i) && actionCues[strings.ToLower(sc.word(i))]
	})
)

var (
	calendarWords = wordSet(`jan january feb february mar march apr april may jun june jul july aug august sep sept september
		oct october nov november dec december monday tuesday wednesday thursday friday saturday sunday`)
	// numberWordList and unitSet are numberWords and units for
	// matchQuantity, in the same order.
	numberWordList = strings.Split(strings.Trim(numberWords, "(?:)"), "|")
	unitSet        = wordSet(`second seconds sec secs minute minutes min mins hour hours hr hrs day days night nights week weeks
		month months year years quarter quarters sprint sprints mg mcg g kg lb lbs pounds oz ml l liter liters litre litres km mi
		mile miles m cm mm ft feet inch inches meter meters metre metres ms µs ns kb mb gb tb kbps mbps gbps ghz mhz kw kwh °c °f
		degrees percent people persons guests attendees users customers members employees engineers seats rooms beds tickets
		units items pieces copies pages words tokens requests calls emails orders licences licenses servers nodes instances
		points votes boxes bottles pills tablets doses times slots stores regions countries cities flights floors stars steps
		reps sets laps`)
	actionCues = wordSet(`will shall must should need needs going plan plans planned decided agreed promised let's lets please
		remember don't ask asked asks tell want wants has have`)
)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isASCIIWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// scan is a text being searched for entities.
type scan struct {
	s             string
	currencyWords bool // it names a currency after a number ("40 dollars")
	// spaceAfter[i] is where the white space after i begins (len(s) if none).
	spaceAfter []int32
	// candidates are the positions where any pattern may begin: word
	// starts, upper-case letters that begin a word, and the symbols
	// $ € £ ¥ # @.
	candidates []int
}

func newScan(s string) *scan {
	sc := &scan{s: s, spaceAfter: make([]int32, len(s)+1)}
	next := int32(len(s))
	sc.spaceAfter[len(s)] = next
	for i := len(s) - 1; i >= 0; i-- {
		if c := s[i]; c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			next = int32(i)
		}
		sc.spaceAfter[i] = next
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '$' || c == '#' || c == '@' || c >= 0x80 && (strings.HasPrefix(s[i:], "€") || strings.HasPrefix(s[i:], "£") || strings.HasPrefix(s[i:], "¥")):
			sc.candidates = append(sc.candidates, i)
		case sc.wordStart(i) || c >= 0x80 && sc.nameStart(i):
			sc.candidates = append(sc.candidates, i)
		}
	}
	for _, w := range []string{"USD", "EUR", "GBP", "dollars", "euros"} {
		if strings.Contains(s, w) {
			sc.currencyWords = true
		}
	}
	return sc
}

// wordStart reports whether a \b-anchored match may begin at i: an ASCII
// word character after a non-word one.
func (sc *scan) wordStart(i int) bool {
	return isASCIIWord(sc.s[i]) && (i == 0 || !isASCIIWord(sc.s[i-1]))
}

// nameStart reports whether a name may begin at i: an upper-case letter
// (of any script) that does not continue a word.
func (sc *scan) nameStart(i int) bool {
	if !utf8.RuneStart(sc.s[i]) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(sc.s[i:])
	if !unicode.IsUpper(r) {
		return false
	}
	prev, _ := utf8.DecodeLastRuneInString(sc.s[:i])
	return i == 0 || !(unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '\'' || prev == '’' || prev == '_')
}

// word is the run of letters and apostrophes from i ("let's").
func (sc *scan) word(i int) string {
	j := i
	for j < len(sc.s) && (sc.s[j] >= 'a' && sc.s[j] <= 'z' || sc.s[j] >= 'A' && sc.s[j] <= 'Z' || sc.s[j] == '\'') {
		j++
	}
	return sc.s[i:j]
}

// token is the text from i to the next white space.
func (sc *scan) token(i int) string { return sc.s[i:sc.spaceAfter[i]] }

// window is the text a match beginning at i can span: up to twelve
// white-space separated words, ending at white space (or the end), so that
// a \b at its end means what it means in the whole text.
func (sc *scan) window(i int) string {
	j := int(sc.spaceAfter[i])
	for words := 1; words < 12 && j < len(sc.s); words++ {
		j = int(sc.spaceAfter[j+1])
	}
	return sc.s[i:j]
}

// matchQuantity is quantityPattern by hand, anchored at i: the end of its
// match, or -1.
func matchQuantity(s string, i int) int {
	if isDigit(s[i]) {
		e := number(s, i)
		// A range: "5-7", "5 – 7".
		j := e
		if j < len(s) && isRESpace(s[j]) {
			j++
		}
		if dash := dashAt(s, j); dash > 0 {
			k := j + dash
			if k < len(s) && isRESpace(s[k]) {
				k++
			}
			if k < len(s) && isDigit(s[k]) {
				if end := quantityUnit(s, number(s, k)); end >= 0 {
					return end
				}
			}
		}
		return quantityUnit(s, e)
	}
	for _, w := range numberWordList {
		if hasPrefixFold(s[i:], w) {
			if end := quantityUnit(s, i+len(w)); end >= 0 {
				return end
			}
		}
	}
	return -1
}

// number is the end of `\d[\d,]*(?:\.\d+)?` at i.
func number(s string, i int) int {
	j := i + 1
	for j < len(s) && (isDigit(s[j]) || s[j] == ',') {
		j++
	}
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		j += 2
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	return j
}

func dashAt(s string, i int) int {
	switch {
	case strings.HasPrefix(s[i:], "-"):
		return 1
	case strings.HasPrefix(s[i:], "–"):
		return len("–")
	}
	return 0
}

// quantityUnit is the end of `[\s-]?(?:business |working |calendar )?UNIT\b`
// at i, or -1.
func quantityUnit(s string, i int) int {
	try := func(j int) int {
		for _, prefix := range []string{"business ", "working ", "calendar "} {
			if hasPrefixFold(s[j:], prefix) {
				if end := unitAt(s, j+len(prefix)); end >= 0 {
					return end
				}
			}
		}
		return unitAt(s, j)
	}
	if i < len(s) && (isRESpace(s[i]) || s[i] == '-') {
		if end := try(i + 1); end >= 0 {
			return end
		}
	}
	return try(i)
}

// unitAt is the end of a unit at i followed by a word boundary, or -1.
func unitAt(s string, i int) int {
	if hasPrefixFold(s[i:], "sq ft") && (i+5 == len(s) || !isASCIIWord(s[i+5])) {
		return i + 5
	}
	j := i
	for _, sym := range []string{"µ", "°"} {
		if strings.HasPrefix(s[j:], sym) {
			j += len(sym)
			break
		}
	}
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
		j++
	}
	if j == i || j < len(s) && isASCIIWord(s[j]) || j-i > 12 || !unitSet[lowerASCII(s[i:j])] {
		return -1
	}
	return j
}

// hasPrefixFold is strings.HasPrefix ignoring the case of ASCII letters
// (prefix in lower case).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for k := 0; k < len(prefix); k++ {
		c := s[k]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[k] {
			return false
		}
	}
	return true
}

// lowerASCII lowers the ASCII letters of a short word without allocating
// when it is lower case already.
func lowerASCII(w string) string {
	for k := 0; k < len(w); k++ {
		if w[k] >= 'A' && w[k] <= 'Z' {
			return strings.ToLower(w)
		}
	}
	return w
}

// isRESpace is regexp's \s: [\t\n\f\r ].
func isRESpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// matches finds p's matches as p.re.FindAllStringSubmatchIndex would: the
// leftmost match, then the next one after its end; but trying p only
// where a match may begin.
func (sc *scan) matches(p *pattern) [][]int {
	var out [][]int
	after := 0 // the end of the last match: the next begins there or later
	for _, i := range sc.candidates {
		if i < after || !p.starts(sc, i) {
			continue
		}
		var m []int
		if p.match != nil {
			if end := p.match(sc.s, i); end > i {
				m = []int{i, end}
			}
		} else if m = p.anchored.FindStringSubmatchIndex(sc.window(i)); m != nil && m[1] > 0 {
			for k := range m {
				if m[k] >= 0 {
					m[k] += i
				}
			}
		} else {
			m = nil
		}
		if m == nil {
			continue
		}
		out = append(out, m)
		after = m[1]
	}
	return out
}

// looksLikeWord: a single capitalised word at the start of a sentence is a
// name unless its ending says it is an ordinary word ("Agreed", "Quickly",
// "Sending").
func looksLikeWord(w string) bool {
	lw := strings.ToLower(w)
	for _, suffix := range []string{"ed", "ly", "ing", "ion", "ment", "ness", "ful", "able", "ous", "ive"} {
		if strings.HasSuffix(lw, suffix) && len(lw) > len(suffix)+2 {
			return true
		}
	}
	return false
}

// notAnAction reports the few words the action cue catches that are not
// actions.
func notAnAction(w string) bool {
	switch w {
	case "be", "been", "the", "a", "an", "it", "this", "that", "you", "we", "i", "not", "also", "really", "just":
		return true
	}
	return false
}

// sentenceStart reports whether position i begins a sentence (or the text).
func sentenceStart(s string, i int) bool {
	j := strings.LastIndexFunc(s[:i], func(r rune) bool { return !unicode.IsSpace(r) && r != '"' && r != '(' && r != '\'' })
	if j < 0 {
		return true
	}
	switch s[j] {
	case '.', '!', '?', ':', '\n', '-', '*':
		return true
	}
	return false
}

// Normalize is the form entities are compared in: lower case, single spaces,
// no surrounding punctuation.
func Normalize(e string) string {
	e = strings.TrimFunc(e, func(r rune) bool {
		switch r {
		case ' ', '.', ',', ';', ':', '!', '?', '"', '\'', '(', ')', '[', ']':
			return true
		}
		return false
	})
	// Most entities are ASCII with single spaces: lower them in one go.
	simple := true
	for i := 0; i < len(e) && simple; i++ {
		c := e[i]
		simple = c < 0x80 && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f' && !(c == ' ' && i+1 < len(e) && e[i+1] == ' ')
	}
	if simple {
		return strings.ToLower(e)
	}
	return strings.ToLower(strings.Join(strings.Fields(e), " "))
}

// Coverage is the share of entities (as Entities returns them) that a
// summary keeps: found in it as written, ignoring case and spacing, at word
// boundaries ("Tom" is not kept by "tomorrow"), or — for a one-word entity —
// as a word of the same stem (an action "send" is kept by "sends" and
// "sending"; by "sent" only if the stems match).
func Coverage(entities []string, summary string) float64 {
	if len(entities) == 0 {
		return 1
	}
	k := newKeeper(summary)
	kept := 0
	for _, e := range entities {
		if k.keeps(e) {
			kept++
		}
	}
	return float64(kept) / float64(len(entities))
}

// keeper answers, for one summary, whether it keeps an entity (Coverage's
// test).
type keeper struct {
	summary, lower string
	stems          map[string]bool
}

func newKeeper(summary string) *keeper {
	return &keeper{summary: summary, lower: strings.ToLower(strings.Join(strings.Fields(summary), " "))}
}

func (k *keeper) keeps(e string) bool {
	n := Normalize(e)
	if containsWord(k.lower, n) {
		return true
	}
	if strings.Contains(n, " ") {
		return false
	}
	if k.stems == nil {
		k.stems = map[string]bool{}
		for _, w := range Words(k.summary) {
			k.stems[Term(w)] = true
		}
	}
	t := Term(n)
	return t != "" && k.stems[t]
}

// containsWord reports whether s contains sub where sub neither begins nor
// ends inside a word of s (a letter or digit next to a letter or digit).
func containsWord(s, sub string) bool {
	if sub == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(sub)
	last, _ := utf8.DecodeLastRuneInString(sub)
	for from := 0; from <= len(s)-len(sub); {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(sub):])
		if !(isWordRune(first) && i > 0 && isWordRune(before)) &&
			!(isWordRune(last) && i+len(sub) < len(s) && isWordRune(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		from = i + size
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
