package retrieval

import (
	"strings"
	"testing"
	"time"
)

func TestParseTimeReadsExpressionsAgainstTheReference(t *testing.T) {
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	ref := time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)
	summer := time.Date(2024, 7, 15, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		query    string
		ref      time.Time
		from, to time.Time
		expr     string
	}{
		{"What happened in May?", ref, d(2023, 5, 1), d(2023, 6, 1), "in May"},
		{"Why was she stressed around August?", ref, d(2023, 8, 1), d(2023, 9, 1), "around August"},
		{"plans for Sept 2024", ref, d(2024, 9, 1), d(2024, 10, 1), "Sept 2024"},
		{"what did she do in march", ref, d(2024, 3, 1), d(2024, 4, 1), "in march"},
		{"Where was Ana in December 2023?", ref, d(2023, 12, 1), d(2024, 1, 1), "December 2023"},
		{"What did we do last summer?", ref, d(2023, 6, 1), d(2023, 9, 1), "last summer"},
		{"What did we do last summer?", summer, d(2023, 6, 1), d(2023, 9, 1), "last summer"},
		{"plans for this summer", summer, d(2024, 6, 1), d(2024, 9, 1), "this summer"},
		{"in the winter of 2022", ref, d(2022, 12, 1), d(2023, 3, 1), "the winter of 2022"},
		{"What happened in 2023?", ref, d(2023, 1, 1), d(2024, 1, 1), "in 2023"},
		{"what did I say yesterday", ref, d(2024, 3, 9), d(2024, 3, 10), "yesterday"},
		{"news from three weeks ago", ref, ref.AddDate(0, 0, -26), ref.AddDate(0, 0, -15), "three weeks ago"},
		{"anything after May 2023?", ref, d(2023, 6, 1), time.Time{}, "after May 2023"},
	} {
		tq := ParseTime(c.query, c.ref)
		if len(tq.Windows) == 0 || !tq.Temporal {
			t.Errorf("%q: no window (%+v)", c.query, tq)
			continue
		}
		w := tq.Windows[0]
		if !w.From.Equal(c.from) || !w.To.Equal(c.to) || w.Expr != c.expr {
			t.Errorf("%q at %s: window [%s, %s) %q, want [%s, %s) %q", c.query, c.ref.Format(time.DateOnly),
				w.From.Format(time.DateOnly), w.To.Format(time.DateOnly), w.Expr, c.from.Format(time.DateOnly), c.to.Format(time.DateOnly), c.expr)
		}
	}
}

func TestAMonthWithoutAYearIsAlsoTheYearBefore(t *testing.T) {
	tq := ParseTime("in May", time.Date(2024, 6, 10, 0, 0, 0, 0, time.UTC))
	if len(tq.Windows) != 2 || tq.Windows[0].From.Year() != 2024 || tq.Windows[1].From.Year() != 2023 {
		t.Fatalf("windows %+v, want May 2024 and May 2023", tq.Windows)
	}
}

func TestQuestionsAboutTimeAreTemporalWithoutAWindow(t *testing.T) {
	ref := time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC)
	for _, q := range []string{"When did Ana adopt Pepper?", "How long after the move did she start?", "Which came first: the trip or the job?"} {
		if tq := ParseTime(q, ref); !tq.Temporal || len(tq.Windows) != 0 {
			t.Errorf("%q: %+v", q, tq)
		}
	}
	for _, q := range []string{"May I ask about the dog?", "What is her summer job?", "the fall of the empire", "What kind of animal is Pepper?",
		"Did Jan call August about the dog?", "we may go"} {
		if tq := ParseTime(q, ref); len(tq.Windows) != 0 {
			t.Errorf("%q reads as a time: %+v", q, tq.Windows)
		}
	}
}

func TestBeforeAndAfterNameAnEvent(t *testing.T) {
	tq := ParseTime("What happened after Maria applied to Summit Freight?", time.Now())
	if len(tq.Anchors) != 1 || !tq.Anchors[0].After || tq.Anchors[0].Text != "Maria applied to Summit Freight" || !tq.Temporal {
		t.Fatalf("anchors %+v", tq.Anchors)
	}
	tq = ParseTime("Where did they live before the move", time.Now())
	if len(tq.Anchors) != 1 || tq.Anchors[0].After || tq.Anchors[0].Text != "the move" {
		t.Fatalf("anchors %+v", tq.Anchors)
	}
}

func TestATimeThatSaysNothingIsUnparsed(t *testing.T) {
	tq := ParseTime("the party three blorfs ago", time.Now())
	if len(tq.Unparsed) != 1 || tq.Unparsed[0] != "three blorfs ago" || len(tq.Windows) != 0 {
		t.Fatalf("%+v", tq)
	}
}

func TestTheWordsOfAWindowAreNotLookedFor(t *testing.T) {
	q := "What did Ana do in December 2023 at work?"
	tq := ParseTime(q, time.Now())
	if got := tq.lexical(q); strings.Contains(got, "December") || strings.Contains(got, "2023") || !strings.Contains(got, "at work") {
		t.Fatalf("lexical %q", got)
	}
}

func TestLexicalLeavesOutTheWordsOfTimeWindows(t *testing.T) {
	ref := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	q := "what did I note last week about the budget"
	tq := ParseTime(q, ref)
	if got := strings.Fields(tq.Lexical(q)); strings.Join(got, " ") != "what did I note about the budget" {
		t.Errorf("Lexical(%q) = %q; want the query without \"last week\"", q, got)
	}
	if plain := "the budget"; ParseTime(plain, ref).Lexical(plain) != plain {
		t.Error("a query without a time expression changed")
	}
}
