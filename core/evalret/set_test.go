package evalret

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
)

const tinyPath = "../../testdata/eval/tiny.json"

// tiny is the hand-made set of testdata/eval/tiny.json, as JSON to edit.
func tiny(t testing.TB) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// TestBadSetsAreRefusedNamingTheFieldAndTheFix: each broken set is
// refused with a Validation (or Parse) error naming where in the file the
// problem is and what to do.
func TestBadSetsAreRefusedNamingTheFieldAndTheFix(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(v map[string]any)
		raw   string
		wants []string
	}{
		{name: "unknown evidence id", edit: func(v map[string]any) {
			at(v, "questions", 0).(map[string]any)["evidence"] = []any{"t1", "t99"}
		}, wants: []string{`questions[0].evidence[1] "t99" is no turn of the file`, "name a turn's id"}},
		{name: "duplicate turn id", edit: func(v map[string]any) {
			at(v, "conversations", 0, "sessions", 1, "turns", 0).(map[string]any)["id"] = "t2"
		}, wants: []string{`conversations[0].sessions[1].turns[0].id "t2" is a duplicate`, "must be unique"}},
		{name: "unknown category", edit: func(v map[string]any) {
			at(v, "questions", 2).(map[string]any)["category"] = "multihop"
		}, wants: []string{`questions[2].category "multihop" is unknown`, "single-hop, multi-hop, temporal, open-domain"}},
		{name: "empty question", edit: func(v map[string]any) {
			at(v, "questions", 1).(map[string]any)["text"] = "  "
		}, wants: []string{"questions[1].text is empty; write the question"}},
		{name: "session without a date", edit: func(v map[string]any) {
			delete(at(v, "conversations", 0, "sessions", 1).(map[string]any), "date_time")
		}, wants: []string{"conversations[0].sessions[1].date_time is required"}},
		{name: "a date that is no date", edit: func(v map[string]any) {
			at(v, "conversations", 0, "sessions", 0).(map[string]any)["date_time"] = "2 March"
		}, wants: []string{"conversations[0].sessions[0].date_time", "RFC 3339"}},
		{name: "unknown split", edit: func(v map[string]any) {
			at(v, "questions", 0).(map[string]any)["split"] = "test"
		}, wants: []string{`questions[0].split "test" is unknown; use dev or heldout`}},
		{name: "no evidence", edit: func(v map[string]any) {
			at(v, "questions", 0).(map[string]any)["evidence"] = []any{}
		}, wants: []string{"questions[0].evidence: none"}},
		{name: "a question about no conversation", edit: func(v map[string]any) {
			at(v, "questions", 3).(map[string]any)["conversation"] = "ana-bob"
		}, wants: []string{`questions[3].conversation "ana-bob" is no conversation of the file`}},
		{name: "a speaker not listed", edit: func(v map[string]any) {
			at(v, "conversations", 0, "sessions", 0, "turns", 1).(map[string]any)["speaker"] = "Bea"
		}, wants: []string{`turns[1].speaker "Bea" is not one of the conversation's speakers`}},
		{name: "an id with a space around it", edit: func(v map[string]any) {
			at(v, "conversations", 0).(map[string]any)["id"] = "ana-ben "
		}, wants: []string{"conversations[0].id starts or ends with a space; remove it"}},
		{name: "unknown field", edit: func(v map[string]any) {
			at(v, "questions", 0).(map[string]any)["evidences"] = []any{"t1"}
		}, wants: []string{"questions[0]", `"evidences"`, `"evidence"`}},
		{name: "several problems at once", edit: func(v map[string]any) {
			at(v, "questions", 0).(map[string]any)["category"] = "x"
			at(v, "questions", 1).(map[string]any)["category"] = "y"
		}, wants: []string{"2 problems:", "questions[0].category", "questions[1].category"}},
		{name: "not JSON", raw: "{\"conversations\": [\n  {\"id\": }", wants: []string{"not valid JSON at line 2"}},
		{name: "not an object", raw: `["a"]`, wants: []string{"holds an array, not an evaluation set"}},
		{name: "empty", raw: " ", wants: []string{"the file is empty"}},
		{name: "a secret line", raw: `"hunter2-the-password"`, wants: []string{"holds a string"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := []byte(c.raw)
			if c.edit != nil {
				v := tiny(t)
				c.edit(v)
				var err error
				if raw, err = json.Marshal(v); err != nil {
					t.Fatal(err)
				}
			}
			set, err := Decode(raw)
			if err == nil {
				t.Fatalf("accepted: %+v", set)
			}
			if k := errs.KindOf(err); k != errs.Validation && k != errs.Parse {
				t.Errorf("kind %s, want Validation or Parse", k)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error quotes the file: %q", err)
			}
		})
	}
}

// TestReadFileNamesTheFileAndRefusesWhatIsNoFile: the file is named in
// every error; a directory or a missing file is refused before reading.
func TestReadFileNamesTheFileAndRefusesWhatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"conversations": [], "questions": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		bad:                             "file " + bad + ": 2 problems: conversations: none",
		dir:                             "is a directory",
		filepath.Join(dir, "gone.json"): "no such file",
	} {
		_, err := ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), want) || errs.As(err).Details["field"] != "file" {
			t.Errorf("%s: %v, want %q (field file)", path, err, want)
		}
	}
	if set, err := ReadFile(tinyPath); err != nil || len(set.Questions) != 4 {
		t.Fatalf("tiny: %v", err)
	}
}

// FuzzDecode: whatever the bytes, Decode does not panic, and a set it
// accepts is sound: ids unique, every question's evidence a turn of its
// own conversation, every category and split known.
func FuzzDecode(f *testing.F) {
	raw, err := os.ReadFile(tinyPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"conversations":[{"id":"c","speakers":["a"],"sessions":[{"id":"s","date_time":"2024-01-01T00:00:00Z","turns":[{"id":"t","speaker":"a","text":"x"}]}]}],"questions":[{"id":"q","conversation":"c","text":"x?","category":"temporal","evidence":["t"]}]}`))
	f.Add([]byte(`{"questions": [{"evidence": ["t", "t"]}]}`))
	f.Add([]byte(`[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Decode(data)
		if err != nil {
			if errs.As(err).Kind == errs.Internal {
				t.Fatalf("an internal error for bad input: %v", err)
			}
			return
		}
		turnConv := map[string]string{}
		for _, c := range set.Conversations {
			for _, s := range c.Sessions {
				if s.DateTime.IsZero() {
					t.Fatalf("a session without a date: %+v", s)
				}
				for _, tn := range s.Turns {
					if _, dup := turnConv[tn.ID]; dup {
						t.Fatalf("duplicate turn %q accepted", tn.ID)
					}
					turnConv[tn.ID] = c.ID
				}
			}
		}
		for _, q := range set.Questions {
			if !isCategory(q.Category) || (q.Split != "" && q.Split != Dev && q.Split != Heldout) || strings.TrimSpace(q.Text) == "" || len(q.Evidence) == 0 {
				t.Fatalf("a bad question accepted: %+v", q)
			}
			for _, e := range q.Evidence {
				if turnConv[e] != q.Conversation {
					t.Fatalf("evidence %q of %q accepted (its conversation %q)", e, q.Conversation, turnConv[e])
				}
			}
		}
	})
}
