package text

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestEntities(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []string // all of these, in this order among themselves
		notWant []string
	}{
		{"Hi, I'm Maria Lopez from Acme Corp. We need to book the Lisbon venue for the product launch on March 14th.",
			[]string{"March 14th", "Maria Lopez", "Acme Corp", "Lisbon", "book"}, []string{"Hi", "I'm", "We"}},
		{"Dr. Elena Petrova sees you on Tuesday, November 18th at 9:45am at St. Mary's Hospital, Building C.",
			[]string{"Tuesday", "November 18th", "9:45am", "Dr. Elena Petrova", "St. Mary's Hospital", "Building C"}, []string{"Dr", "St"}},
		{"Keep taking metoprolol 50 mg; fast for 12 hours; refunds take 5-7 business days, the job six weeks.",
			[]string{"50 mg", "12 hours", "5-7 business days", "six weeks"}, []string{"Keep", "50"}},
		{"Release v5.12.3 broke ratelimit.go: Limiter.Check calls refill() and max_connections is 1,000.",
			[]string{"v5.12.3", "ratelimit.go", "Limiter.Check", "refill()", "max_connections", "1,000"}, nil},
		{"Mail maria@example.com, see https://example.com/x?y=1 about #launch and @tom, OPS-4021, 30% off, €12,000, 40 dollars, Q3 2025, 2025-11-05T10:00Z.",
			[]string{"https://example.com/x?y=1", "maria@example.com", "Q3 2025", "2025-11-05T10:00Z", "€12,000", "40 dollars", "#launch", "@tom", "OPS-4021", "30%"}, nil},
		{"Thanks! Agreed. Sounds good. Quickly, let's ship it. Please send the contract to the NASA team by Friday.",
			[]string{"Friday", "NASA", "ship", "send"}, []string{"Thanks", "Agreed", "Sounds", "Quickly", "Please"}},
		{"Émile Zola and Ólafur met in Zürich with the CEO of R&D.", []string{"Émile Zola", "Ólafur", "Zürich", "CEO", "R&D"}, nil},
		{"We decided to move the kickoff to 9:30am on Thursday. Tom will send it.", []string{"9:30am", "Thursday", "Tom", "move", "send"}, nil},
		{"Sure, Maria. Hello Tom.", []string{"Maria", "Tom"}, []string{"Sure", "Hello"}},
		{"The price is $40,000 — not $4,000.", []string{"$40,000", "$4,000"}, []string{"40", "000"}},
		{"", nil, nil},
	} {
		got := Entities(c.in)
		norm := func(xs []string) []string {
			var out []string
			for _, x := range xs {
				out = append(out, Normalize(x))
			}
			return out
		}
		g := norm(got)
		last := -1
		for _, w := range c.want {
			i := slices.Index(g, Normalize(w))
			if i < 0 {
				t.Errorf("Entities(%q) = %q: lacks %q", c.in, got, w)
			} else if i < last {
				t.Errorf("Entities(%q) = %q: %q out of order", c.in, got, w)
			} else {
				last = i
			}
		}
		for _, w := range c.notWant {
			if slices.Contains(got, w) {
				t.Errorf("Entities(%q) = %q: has %q", c.in, got, w)
			}
		}
		// Each once.
		slices.Sort(g)
		if len(slices.Compact(slices.Clone(g))) != len(g) {
			t.Errorf("Entities(%q) = %q repeats one", c.in, got)
		}
	}
}

// slowEntities is Entities with every pattern run over the whole text with
// FindAll, as it was before it learned where matches may begin. Names must
// begin a word (names.starts): here, after a character that is not part of
// one, or at the start.
func slowEntities(s string) []string {
	return entities(s, func(p *pattern) [][]int {
		if p != names {
			return p.re.FindAllStringSubmatchIndex(s, -1)
		}
		var out [][]int
		for _, m := range nameAfterBoundary.FindAllStringSubmatchIndex(s, -1) {
			out = append(out, m[2:4])
		}
		return out
	})
}

var nameAfterBoundary = regexp.MustCompile(`(?:^|[^\p{L}\p{N}'’_])(` + namePattern.String() + `)`)

// corpus is text to test against: the testdata conversations, and random
// mixtures of words, numbers, units, symbols and scripts.
func corpus(t testing.TB) []string {
	var out []string
	files, _ := filepath.Glob("../../testdata/history/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if _, text, ok := strings.Cut(line, "text: "); ok {
				out = append(out, strings.Trim(strings.TrimSuffix(strings.TrimSpace(text), "}"), `"`))
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("only %d lines of testdata", len(out))
	}
	pieces := []string{"Maria", "Lopez", "the", "will", "send", "book", "$40,000", "€5", "12", "hours", "5-7", "business", "days",
		"six", "weeks", "a", "dozen", "Dr.", "St.", "Mary's", "v2.4.0", "main.go", "Foo.Bar", "x()", "OPS-12", "snake_case", "#tag",
		"@who", "a@b.co", "https://x.io/a", "March", "3rd,", "2025", "Monday", "10am", "9:30", "Q4", "NASA", "R&D", "30%",
		"Émile", "Zürich", "東京", "—", "(", ")", ".", ",", "!", "?", ";", "let's", "don't", "please", "decided", "to", "need",
		"mg", "km", "sq", "ft", "°C", "µs", "100", "1,000.50", "USD", "dollars", "Building", "C", "I", "of", "van", "Berg"}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 2000 {
		n := 3 + rng.IntN(25)
		var b strings.Builder
		for k := 0; k < n; k++ {
			if k > 0 {
				b.WriteString([]string{" ", " ", " ", "", "  ", "\n", "-"}[rng.IntN(7)])
			}
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		out = append(out, b.String())
	}
	return out
}

// TestEntitiesAsRegexpWould: trying each pattern only where a match may
// begin finds what running it everywhere finds.
func TestEntitiesAsRegexpWould(t *testing.T) {
	t.Parallel() // pure functions over the test corpus: the package's slowest three run side by side
	bad := 0
	for _, s := range corpus(t) {
		if got, want := Entities(s), slowEntities(s); !slices.Equal(got, want) {
			bad++
			if bad <= 10 {
				t.Errorf("Entities(%q)\n = %q\nwant %q", s, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d texts differ", bad)
	}
}

// TestQuantityByHand: matchQuantity matches as quantityPattern does,
// anchored where a match may begin.
func TestQuantityByHand(t *testing.T) {
	t.Parallel() // pure functions over the test corpus
	anchored := regexp.MustCompile(`^(?:` + quantityPattern.String() + `)`)
	for _, s := range append(corpus(t), "5mg", "5-day", "5 - 7 days", "5 –7 nights", "a hundred people", "dozens of servers",
		"sixty days", "sixmg", "ten ants", "1,5.25 km", "12 sq ft", "3 °C", "4 µs", "7 business  days", "Six Weeks") {
		sc := newScan(s)
		for _, i := range sc.candidates {
			if !sc.wordStart(i) {
				continue
			}
			want := -1
			if m := anchored.FindStringIndex(s[i:]); m != nil {
				want = i + m[1]
			}
			if got := matchQuantity(s, i); got != want {
				t.Errorf("matchQuantity(%q, %d) = %d, regexp %d", s, i, got, want)
			}
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"  Maria   Lopez. ": "maria lopez",
		"(Acme Corp)":       "acme corp",
		"$40,000!":          "$40,000",
		"'quoted'":          "quoted",
		"":                  "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCoverage(t *testing.T) {
	for _, c := range []struct {
		entities []string
		summary  string
		want     float64
	}{
		{[]string{"Maria Lopez", "$40,000"}, "maria  LOPEZ paid $40,000.", 1},
		{[]string{"Tom"}, "see you tomorrow", 0},                 // not inside a word
		{[]string{"book"}, "she booked it", 1},                   // same stem
		{[]string{"send"}, "sending now", 1},                     // same stem
		{[]string{"$4,000"}, "costs $40,000", 0},                 // not inside a number
		{[]string{"Acme Corp", "Lisbon"}, "Acme in Lisbon", 0.5}, // a name of two words needs both, together
		{nil, "anything", 1},
		{[]string{"Zürich"}, "von zürich", 1},
	} {
		if got := Coverage(c.entities, c.summary); got != c.want {
			t.Errorf("Coverage(%q, %q) = %v, want %v", c.entities, c.summary, got, c.want)
		}
	}
}

func BenchmarkEntities(b *testing.B) {
	s := "Maria Lopez will book the Lisbon venue for $40,000 on March 3rd. We decided to take the train rather than a tour; Tom said the flights cost 1,720 for two and OPS-4021 is open. Thanks!"
	b.Run("scan", func(b *testing.B) {
		for range b.N {
			Entities(s)
		}
	})
	b.Run("regexp everywhere", func(b *testing.B) {
		for range b.N {
			slowEntities(s)
		}
	})
}

var _ = fmt.Sprint
