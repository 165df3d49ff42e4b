package retrieval

import (
	"strconv"
	"strings"
	"time"
)

// Window is a span of time a query asks about: [From, To). A zero From
// or To leaves that side open.
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Expr is the words of the query it was read from.
	Expr string `json:"expr"`
}

// Contains says whether t is inside the window.
func (w Window) Contains(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	return (w.From.IsZero() || !t.Before(w.From)) && (w.To.IsZero() || t.Before(w.To))
}

// Anchor is a time relative to an event the query names: "after the
// move" is the time after the turn that best matches "the move".
type Anchor struct {
	// After is true for "after/since X", false for "before/until X".
	After bool `json:"after"`
	// Text is the event's words ("the move").
	Text string `json:"text"`
	Expr string `json:"expr"`
}

// TimeQuery is what the time expressions of a query say.
type TimeQuery struct {
	// Temporal marks a query about time ("when did ...", "how long"),
	// windows or not.
	Temporal bool `json:"temporal"`
	// Windows are the spans the query names.
	Windows []Window `json:"windows,omitempty"`
	// Anchors are the events the query places its answer before or
	// after.
	Anchors []Anchor `json:"anchors,omitempty"`
	// Unparsed are the expressions that looked like time but said
	// nothing that could be placed ("3 blorfs ago", "last wintertide").
	Unparsed []string `json:"unparsed,omitempty"`
	// spans are the byte ranges of the query the windows were read
	// from: left out of lexical matching (a month's name in the query
	// is not a word to look for).
	spans [][2]int
}

var months = map[string]time.Month{
	"january": time.January, "february": time.February, "march": time.March, "april": time.April,
	"may": time.May, "june": time.June, "july": time.July, "august": time.August,
	"september": time.September, "october": time.October, "november": time.November, "december": time.December,
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"jun": time.June, "jul": time.July, "aug": time.August, "sep": time.September,
	"sept": time.September, "oct": time.October, "nov": time.November, "dec": time.December,
}

// seasons are the northern seasons' first months.
var seasons = map[string]time.Month{
	"spring": time.March, "summer": time.June, "autumn": time.September, "fall": time.September, "winter": time.December,
}

// monthPreps are the words after which a month's name is a month.
var monthPreps = map[string]bool{
	"in": true, "during": true, "since": true, "until": true, "by": true, "around": true, "early": true,
	"late": true, "mid": true, "last": true, "next": true, "this": true, "of": true, "through": true, "throughout": true,
}

var units = map[string]int{"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30, "year": 365, "years": 365}

var numbers = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple": 2}

// qword is a word of the query with its byte range.
type qword struct {
	lower   string
	capital bool
	start   int
	end     int
}

func queryWords(q string) []qword {
	var out []qword
	start := -1
	for i, r := range q + " " {
		in := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127 && r != '’' || (r == '\'' || r == '’') && start >= 0
		if in && start < 0 {
			start = i
		}
		if !in && start >= 0 {
			w := q[start:i]
			out = append(out, qword{lower: lowerWord(w), capital: w[0] >= 'A' && w[0] <= 'Z', start: start, end: i})
			start = -1
		}
	}
	return out
}

// ParseTime reads the time expressions of a query against a reference
// time (when the query is asked): a month ("in May", "in December
// 2023"), a season ("last summer", "in the winter of 2023"), a year ("in
// 2023"), a span back from the reference ("last month", "three weeks
// ago", "yesterday"), an event ("before the move", "after Maria's
// injury"), and the questions that only say they are about time ("when
// did ...", "how long ...", "which came first").
func ParseTime(query string, ref time.Time) TimeQuery {
	var tq TimeQuery
	ws := queryWords(query)
	used := make([]bool, len(ws))
	add := func(from, to time.Time, i, j int) {
		expr := query[ws[i].start:ws[j].end]
		tq.Windows = append(tq.Windows, Window{From: from, To: to, Expr: expr})
		tq.spans = append(tq.spans, [2]int{ws[i].start, ws[j].end})
		for k := i; k <= j; k++ {
			used[k] = true
		}
		tq.Temporal = true
	}
	prev := func(i int) string {
		if i > 0 {
			return ws[i-1].lower
		}
		return ""
	}
	yearAt := func(i int) (int, bool) {
		if i < len(ws) && len(ws[i].lower) == 4 {
			if y, err := strconv.Atoi(ws[i].lower); err == nil && y >= 1900 && y <= 2200 {
				return y, true
			}
		}
		return 0, false
	}
	isYear := func(i int) bool { _, ok := yearAt(i); return ok }
	for i := 0; i < len(ws); i++ {
		if used[i] {
			continue
		}
		w := ws[i]
		switch {
		case w.lower == "when" || w.lower == "long" && prev(i) == "how" || w.lower == "first" && (prev(i) == "came" || prev(i) == "happened") ||
			w.lower == "date" && prev(i) == "what" || w.lower == "year" && (prev(i) == "what" || prev(i) == "which"):
			tq.Temporal = true
		case months[w.lower] != 0 && (monthPreps[prev(i)] || w.capital && isYear(i+1)):
			// A month is a month after "in", "around" and the like, or
			// before a year: "May", "August" and "Jan" alone may be
			// people, and "may" a verb.
			m := months[w.lower]
			if y, ok := yearAt(i + 1); ok {
				from := time.Date(y, m, 1, 0, 0, 0, 0, ref.Location())
				add(from, from.AddDate(0, 1, 0), i, i+1)
				i++
				continue
			}
			// The last such month begun by the reference time, and the
			// one a year before it: a conversation of months may have
			// met the month twice.
			from := time.Date(ref.Year(), m, 1, 0, 0, 0, 0, ref.Location())
			if from.After(ref) {
				from = from.AddDate(-1, 0, 0)
			}
			start := i
			if monthPreps[prev(i)] {
				start = i - 1
			}
			add(from, from.AddDate(0, 1, 0), start, i)
			tq.Windows = append(tq.Windows, Window{From: from.AddDate(-1, 0, 0), To: from.AddDate(-1, 1, 0), Expr: tq.Windows[len(tq.Windows)-1].Expr})
		case seasons[w.lower] != 0:
			m := seasons[w.lower]
			start, end := i, i
			var from time.Time
			y, hasYear := yearAt(i + 1)
			if !hasYear && i+2 < len(ws) && ws[i+1].lower == "of" {
				y, hasYear = yearAt(i + 2)
				if hasYear {
					end = i + 2
				}
			} else if hasYear {
				end = i + 1
			}
			p := prev(i)
			if p == "the" && i > 1 {
				start = i - 1
				p = ws[i-2].lower
			}
			switch {
			case hasYear:
				from = time.Date(y, m, 1, 0, 0, 0, 0, ref.Location())
			case p == "last" || p == "this" || p == "in" || p == "during" || p == "over" || p == "past":
				from = time.Date(ref.Year(), m, 1, 0, 0, 0, 0, ref.Location())
				if from.After(ref) {
					from = from.AddDate(-1, 0, 0)
				}
				if p == "last" && !from.AddDate(0, 3, 0).Before(ref) {
					from = from.AddDate(-1, 0, 0) // "last summer" is over
				}
			default:
				continue // "the fall of the empire", "summer job"
			}
			if p != "the" && start == i && i > 0 && (p == "last" || p == "this" || p == "in" || p == "during" || p == "over" || p == "past") {
				start = i - 1
			}
			add(from, from.AddDate(0, 3, 0), start, end)
		case w.lower == "yesterday":
			day := time.Date(ref.Year(), ref.Month(), ref.Day(), 0, 0, 0, 0, ref.Location())
			add(day.AddDate(0, 0, -1), day, i, i)
		case (w.lower == "last" || w.lower == "past" || w.lower == "this") && i+1 < len(ws) && units[ws[i+1].lower] != 0:
			days := units[ws[i+1].lower]
			if w.lower == "this" {
				add(ref.AddDate(0, 0, -days), ref.AddDate(0, 0, 1), i, i+1)
			} else {
				add(ref.AddDate(0, 0, -2*days), ref.AddDate(0, 0, 1), i, i+1)
			}
			i++
		case w.lower == "ago" && i >= 1:
			u := units[ws[i-1].lower]
			n := 0
			if i >= 2 {
				if v, err := strconv.Atoi(ws[i-2].lower); err == nil {
					n = v
				} else {
					n = numbers[ws[i-2].lower]
				}
			}
			if u == 0 || n == 0 {
				tq.Unparsed = append(tq.Unparsed, query[ws[max(0, i-2)].start:w.end])
				tq.Temporal = true
				continue
			}
			back := ref.AddDate(0, 0, -n*u)
			half := max(1, n*u/4)
			add(back.AddDate(0, 0, -half), back.AddDate(0, 0, half+1), max(0, i-2), i)
		case (w.lower == "in" || w.lower == "during") && i+1 < len(ws):
			if y, ok := yearAt(i + 1); ok {
				from := time.Date(y, 1, 1, 0, 0, 0, 0, ref.Location())
				add(from, from.AddDate(1, 0, 0), i, i+1)
				i++
			}
		case w.lower == "before" || w.lower == "after" || w.lower == "since" || w.lower == "until":
			// The event is the words up to the end of the clause.
			end := strings.IndexAny(query[w.end:], "?!.,;:")
			rest := query[w.end:]
			if end >= 0 {
				rest = rest[:end]
			}
			rest = strings.TrimSpace(rest)
			if rest == "" {
				continue
			}
			if nt := ParseTime("in "+rest, ref); len(nt.Windows) > 0 {
				// "after May": the window's far side.
				for _, win := range nt.Windows {
					if w.lower == "after" || w.lower == "since" {
						tq.Windows = append(tq.Windows, Window{From: win.To, Expr: w.lower + " " + rest})
					} else {
						tq.Windows = append(tq.Windows, Window{To: win.From, Expr: w.lower + " " + rest})
					}
				}
				tq.Temporal = true
				spanEnd := w.end + strings.Index(query[w.end:], rest) + len(rest)
				for k := i + 1; k < len(ws) && ws[k].start < spanEnd; k++ {
					used[k] = true
				}
				tq.spans = append(tq.spans, [2]int{w.start, spanEnd})
				continue
			}
			tq.Anchors = append(tq.Anchors, Anchor{After: w.lower == "after" || w.lower == "since", Text: rest, Expr: w.lower + " " + rest})
			tq.Temporal = true
		}
	}
	return tq
}

// lexical is the query without its time windows' words.
func (tq TimeQuery) lexical(query string) string {
	if len(tq.spans) == 0 {
		return query
	}
	var b strings.Builder
	at := 0
	for _, s := range tq.spans {
		if s[0] < at {
			continue
		}
		b.WriteString(query[at:s[0]])
		b.WriteByte(' ')
		at = s[1]
	}
	b.WriteString(query[at:])
	return b.String()
}
