package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// red styles s with a colour whatever the test's profile: an escape
// sequence a cut must neither count nor break.
func red(s string) string {
	r := lipgloss.NewRenderer(nil)
	r.SetColorProfile(termenv.ANSI256)
	return r.NewStyle().Foreground(lipgloss.Color("196")).Render(s)
}

func TestTruncationCountsScreenCells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello world", 20, "hello world"},
		{"hello world", 11, "hello world"},
		{"hello world", 6, "hello…"},
		{"日本語のテキスト", 16, "日本語のテキスト"}, // 8 wide characters: 16 cells
		{"日本語のテキスト", 7, "日本語…"},
		{"日本語のテキスト", 6, "日本…"}, // a wide character does not fit in one cell: it goes
		{"🙂🙂🙂 ok", 6, "🙂🙂…"},
		{"ab", 0, "…"}, // never nothing: the ellipsis says something was cut
	} {
		got := truncateTo(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("truncateTo(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
		if tc.n > 0 && lineWidth(got) > tc.n {
			t.Errorf("truncateTo(%q, %d) takes %d cells", tc.in, tc.n, lineWidth(got))
		}
	}
	if lineWidth("日本") != 4 || lineWidth("🙂") != 2 || lineWidth(red("abc")) != 3 {
		t.Errorf("lineWidth: %d %d %d", lineWidth("日本"), lineWidth("🙂"), lineWidth(red("abc")))
	}
}

func TestTruncationKeepsStyles(t *testing.T) {
	t.Parallel()
	s := red("hello world") + " plain"
	got := truncateTo(s, 8)
	if ansi.Strip(got) != "hello w…" || lineWidth(got) != 8 {
		t.Errorf("truncateTo styled: %q (%d cells)", ansi.Strip(got), lineWidth(got))
	}
	if !strings.Contains(got, "\x1b[") {
		t.Errorf("the style went: %q", got)
	}
	// The colour is reset after the cut, so it does not bleed into what follows.
	if !strings.Contains(got, "\x1b[m") && !strings.Contains(got, "\x1b[0m") {
		t.Errorf("no reset after the cut: %q", got)
	}
	if got := fitLine(red("日本語"), 5); ansi.Strip(got) != "日本…" || lineWidth(got) != 5 {
		t.Errorf("fitLine styled wide: %q (%d cells)", ansi.Strip(got), lineWidth(got))
	}
}

func TestFitMakesExactlyTheSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		w    int
		want string
	}{
		{"ab", 4, "ab  "},
		{"日本", 6, "日本  "},
		{"日本語", 4, "日… "}, // cut to 3 cells, padded to 4
		{"abcdef", 4, "abc…"},
		{"abcd", 4, "abcd"},
	} {
		if got := fitLine(tc.in, tc.w); got != tc.want || lineWidth(got) != tc.w {
			t.Errorf("fitLine(%q, %d) = %q", tc.in, tc.w, got)
		}
	}
	got := fit("a\n日本語のテキスト\nc\nd", 5, 3)
	if want := "a    \n日本…\nc    "; got != want {
		t.Errorf("fit = %q, want %q", got, want)
	}
	if got := fit("a", 3, 2); got != "a  \n   " {
		t.Errorf("fit pads lines: %q", got)
	}
	if fit("a", 0, 3) != "" || fit("a", 3, 0) != "" {
		t.Error("fit of no room is not empty")
	}
	if lineCount("a\nb\n") != 3 || lineCount("") != 1 {
		t.Errorf("lineCount: %d %d", lineCount("a\nb\n"), lineCount(""))
	}
}

func TestTruncateLeftKeepsTheEnd(t *testing.T) {
	t.Parallel()
	if got := truncateLeft("/home/me/.local/share/engram", 15); got != "…l/share/engram" {
		t.Errorf("truncateLeft = %q", got)
	}
	if got := truncateLeft("データ/ファイル", 9); got != "…ファイル" {
		t.Errorf("truncateLeft wide = %q", got)
	}
	if got := truncateLeft("short", 10); got != "short" {
		t.Errorf("truncateLeft short = %q", got)
	}
	// Turn ids: the end, without the dash the cut leaves.
	id := "0195f3c2-7a1b-7c3d-9e4f-0123456789ab"
	if got := shortenLeft(id, 14); got != "…0123456789ab" {
		t.Errorf("shortenLeft = %q", got)
	}
	if got := shortenLeft(id, 15); got != "…f-0123456789ab" {
		t.Errorf("shortenLeft = %q", got)
	}
	if got := shortenLeft("turn-1", 14); got != "turn-1" {
		t.Errorf("shortenLeft short = %q", got)
	}
	if got := shortID(id); got != "…456789ab" {
		t.Errorf("shortID = %q", got)
	}
}

func TestOneLineNeutralisesControls(t *testing.T) {
	t.Parallel()
	if got := oneLine("a\r\nb\nc\td\x1b[31me"); got != "a b c d\uFFFD[31me" {
		t.Errorf("oneLine = %q", got)
	}
	if got := oneLine("日本 🙂"); got != "日本 🙂" {
		t.Errorf("oneLine changed plain text: %q", got)
	}
}

func TestWrapping(t *testing.T) {
	t.Parallel()
	// wrapText: plain text from outside, its line breaks kept, indented,
	// flags never split at their hyphens nor from their values.
	got := wrapText("run it with --llm offline\nthen stop", 14, "  ")
	want := []string{"  run it with", "  --llm offline", "  then stop"}
	if !slices.Equal(got, want) {
		t.Errorf("wrapText = %q, want %q", got, want)
	}
	if got := wrapText("日本語のテキストです", 8, ""); !slices.Equal(got, []string{"日本語の", "テキスト", "です"}) {
		t.Errorf("wrapText wide = %q", got)
	}
	if got := wrapText("a\x1b]0;title\x07b", 20, ""); strings.ContainsRune(got[0], '\x1b') {
		t.Errorf("wrapText let an escape through: %q", got)
	}
	// wrap: styled text, every line indented.
	if got := wrap(red("one two three"), 7, " "); ansi.Strip(got) != " one two\n three" {
		t.Errorf("wrap = %q", ansi.Strip(got))
	}
	// wrapIndented: the continuation hangs two columns deeper.
	if got := wrapIndented(" [0] user: hello there my friend", 16); got != " [0] user: hello\n   there my\n   friend" {
		t.Errorf("wrapIndented = %q", got)
	}
	if got := wrapIndented("short", 16); got != "short" {
		t.Errorf("wrapIndented short = %q", got)
	}
	// wrapValue: at most n lines, the last one saying there is more.
	if got := wrapValue("one two three four five six", 10, 2); !slices.Equal(got, []string{"one two", "three …"}) {
		t.Errorf("wrapValue = %q", got)
	}
	if got := styleLines(lipgloss.NewStyle(), []string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("styleLines = %q", got)
	}
}

// The error plan.replan gives without a model, as the console shows it.
const noModel = "LLMError: plan.replan needs a language model: start engram with --llm ollama or --llm openai (and --model NAME), or write the plan yourself with plan.create"

// Issue 14, bug 4: the detail panel split "--llm ollama" across lines.
// Every wrapper breaks at spaces and keeps a flag with its value, at every
// width, in plain and styled text.
func TestWrappingNeverSplitsAFlagFromItsValue(t *testing.T) {
	t.Parallel()
	units := []string{"--llm ollama", "--llm openai", "--model NAME),", "plan.create"}
	check := func(how string, lines []string, width int) {
		t.Helper()
		text := strings.Join(lines, "\n")
		for _, u := range units {
			if !strings.Contains(text, u) {
				t.Errorf("%s at %d split %q:\n%s", how, width, u, text)
			}
		}
		for _, l := range lines {
			if lineWidth(l) > width {
				t.Errorf("%s at %d: %q is %d wide", how, width, l, lineWidth(l))
			}
			if strings.ContainsAny(l, nonBreakingHyphen+nonBreakingSpace) {
				t.Errorf("%s at %d left a stand-in: %q", how, width, l)
			}
		}
	}
	for width := 16; width <= 120; width++ {
		check("wrapText", wrapText(noModel, width, ""), width)
		check("wrap", strings.Split(ansi.Strip(wrap(red(noModel), width, "")), "\n"), width)
		check("wrapValue", wrapValue(noModel, width+1, 20), width)
		check("wrapIndented", strings.Split(wrapIndented(noModel, width), "\n"), width)
	}
	// The line breaks fall at spaces: joined again, the text is whole.
	if got := strings.Join(wrapText(noModel, 30, ""), " "); got != noModel {
		t.Errorf("wrapText lost or added text: %q", got)
	}
	// A negative number keeps its sign; a flag without a value stays whole;
	// text that holds a stand-in of its own comes back unchanged.
	if got := wrapText("move it by -12 now", 9, ""); !slices.Equal(got, []string{"move it", "by -12", "now"}) {
		t.Errorf("negative number: %q", got)
	}
	if got := wrapText("run with --in-memory", 12, ""); !slices.Equal(got, []string{"run with", "--in-memory"}) {
		t.Errorf("flag alone: %q", got)
	}
	if got := wrapText("a\u00a0b --llm x", 40, ""); !slices.Equal(got, []string{"a\u00a0b --llm x"}) {
		t.Errorf("own stand-in: %q", got)
	}
}

// Issue 14, bug 4: the status line cut the alternative off at 120
// columns. A message too long keeps its start and its last clause, cut at
// spaces, never inside a flag or leaving a bracket open.
func TestFitMessageKeepsTheStartAndTheAlternative(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		width int
		want  string
	}{
		{200, noModel},
		// The cut would leave "(and" open: the bracket goes whole.
		{140, "LLMError: plan.replan needs a language model: start engram with --llm ollama or --llm openai … or write the plan yourself with plan.create"},
		{119, "LLMError: plan.replan needs a language model: start engram with … or write the plan yourself with plan.create"},
		{79, "LLMError: plan.replan needs a … or write the plan yourself with plan.create"},
		// Too narrow for the last clause and a start: cut at the end, at a space.
		{50, "LLMError: plan.replan needs a language model:…"},
	} {
		got := fitMessage(noModel, c.width)
		if got != c.want {
			t.Errorf("at %d:\n got %q\nwant %q", c.width, got, c.want)
		}
		if lineWidth(got) > c.width {
			t.Errorf("at %d: %d wide", c.width, lineWidth(got))
		}
	}
	// One word wider than the line: cut inside it, as before.
	if got := fitMessage("supercalifragilistic", 8); got != "superca…" {
		t.Errorf("one long word: %q", got)
	}
	// The status line shows it so, after its one column of margin.
	var st status
	st.set(noModel, true)
	styles := DefaultStyles()
	if got := ansi.Strip(st.view(&styles, 120)); !strings.HasSuffix(got, "or write the plan yourself with plan.create") || lineWidth(got) > 120 {
		t.Errorf("status line at 120: %q", got)
	}
}

func TestTimesReadAsThePanesShowThem(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 10, 4, 30, 0, time.UTC)
	today := time.Date(2026, 3, 2, 9, 5, 7, 0, time.UTC)
	earlier := time.Date(2026, 2, 28, 23, 59, 0, 0, time.UTC)
	for _, tc := range []struct{ got, want string }{
		{clockTime(today, now), "09:05:07"},
		{clockTime(earlier, now), "2026-02-28 23:59"},
		{minuteTime(today, now), "09:05"},
		{minuteTime(earlier, now), "2026-02-28 23:59"},
		{formatTime(today), "2026-03-02 09:05 UTC"},
		{ago(now, now.Add(time.Second)), "in the future"},
		{ago(now, now.Add(-59*time.Second)), "just now"},
		{ago(now, now.Add(-5*time.Minute)), "5m ago"},
		{ago(now, now.Add(-47*time.Hour)), "47h ago"},
		{ago(now, now.Add(-72*time.Hour)), "3d ago"},
		{gapMinutes(0), "moments"},
		{gapMinutes(90), "90 min"},
		{gapMinutes(180), "3 h"},
		{gapMinutes(3 * 24 * 60), "3 days"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestWordsAndFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{plural(1, "match", "matches"), "1 match"},
		{plural(0, "match", "matches"), "0 matches"},
		{plural(3, "match", "matches"), "3 matches"},
		{listWords(nil, "and"), ""},
		{listWords([]string{"sms"}, "and"), "sms"},
		{listWords([]string{"sms", "whatsapp", "voice"}, "or"), "sms, whatsapp or voice"},
		{gaugeFigures(12, 100), "12/100"},
		{gaugeFigures(12, 0), "12"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	st := DefaultStyles()
	for _, tc := range []struct {
		n, total int
		want     string
	}{
		{4, 4, "[██████████]"},
		{48, 120, "[████······]"},
		{1, 1000, "[█·········]"}, // something is never nothing
		{0, 0, "[··········]"},
		{9, 4, "[██████████]"},
	} {
		if got := ansi.Strip(meter(&st, tc.n, tc.total, 10)); got != tc.want {
			t.Errorf("meter(%d, %d) = %q, want %q", tc.n, tc.total, got, tc.want)
		}
	}
}

func TestTableCellsAndColumns(t *testing.T) {
	t.Parallel()
	name := tableColumn{title: "title", width: 10}
	num := tableColumn{title: "turns", width: 7, right: true}
	for _, tc := range []struct {
		c    tableColumn
		text string
		want string
	}{
		{name, "Lisbon", "Lisbon    "},
		{name, "Lisbon offsite", "Lisbon …  "}, // 8 cells of room: two columns between cells
		{name, "日本語の旅行", "日本語…   "},
		{num, "12", "   12  "},
		{num, "1234567", "1234…  "},
	} {
		if got := tableCell(tc.c, tc.text); got != tc.want || lineWidth(got) != tc.c.width {
			t.Errorf("tableCell(%+v, %q) = %q, want %q", tc.c, tc.text, got, tc.want)
		}
	}
	cols := []tableColumn{{title: "title"}, {title: "channels", width: 12}, {title: "turns", width: 7, right: true}, {title: "links", width: 7}}
	// Room for all: the title takes what is left (80 - 3 - 26).
	all := dropColumns(slices.Clone(cols), "title", 80, 20, "channels", "links")
	if len(all) != 4 || all[0].width != 51 {
		t.Errorf("wide: %+v", all)
	}
	// Narrow: channels go first, then links, until the title has 20.
	narrow := dropColumns(slices.Clone(cols), "title", 40, 20, "channels", "links")
	if titles := columnTitles(narrow); !slices.Equal(titles, []string{"title", "turns", "links"}) || narrow[0].width != 23 {
		t.Errorf("narrow: %v %+v", titles, narrow)
	}
	tiny := dropColumns(slices.Clone(cols), "title", 12, 20, "channels", "links")
	if titles := columnTitles(tiny); !slices.Equal(titles, []string{"title", "turns"}) || tiny[0].width != 8 {
		t.Errorf("tiny: %v %+v", titles, tiny)
	}
	if got := tableHeader(narrow); got != "   title                  turns  links" {
		t.Errorf("tableHeader = %q", got)
	}
}

func columnTitles(cols []tableColumn) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.title)
	}
	return out
}
