package episodic

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/llm"
)

// answering is a model that answers every request with text (or fails
// with err).
type answering struct {
	text string
	err  error
}

func (answering) Info() llm.Info { return llm.Info{Provider: "test", Model: "answering"} }
func (a answering) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	if a.err != nil {
		return llm.Response{}, a.err
	}
	return llm.Response{Text: a.text}, nil
}
func (answering) Embed(context.Context, llm.EmbedRequest) (llm.EmbedResponse, error) {
	return llm.EmbedResponse{}, errors.New("no embeddings")
}

var judgePrompt = PromptVersion{Version: 2, Guidance: []string{guidanceTemporal}}

func judgeText(text string) Assessment {
	return judge(context.Background(), answering{text: text}, judgePrompt, "Title: Weather in New York", "Oh, and what is it on Thursday?", 45*time.Minute)
}

// checkAssessment: an assessment is either available and well formed, or
// unavailable with an error saying why.
func checkAssessment(t *testing.T, answer string, a Assessment) {
	t.Helper()
	if a.PromptVersion != judgePrompt.Version {
		t.Errorf("%q: prompt version %d", answer, a.PromptVersion)
	}
	if a.Available {
		if a.Error != "" || math.IsNaN(a.Confidence) || a.Confidence < 0 || a.Confidence > 1 {
			t.Errorf("%q: available assessment %+v", answer, a)
		}
		return
	}
	if a.Error == "" || a.Related || a.Confidence != 0 || a.Reasoning != "" {
		t.Errorf("%q: unavailable assessment without an error, or with a judgement: %+v", answer, a)
	}
}

func TestJudgeAnswers(t *testing.T) {
	cases := []struct {
		answer    string
		available bool
		related   bool
		conf      float64
		errSays   string
	}{
		{`{"related": true, "confidence": 0.92, "reasoning": "Both about weather in New York", "key_signals": ["weather", "New York"]}`, true, true, 0.92, ""},
		{"  \n" + `{"related": false, "confidence": 0.88}` + "\n", true, false, 0.88, ""},
		{`{"related": false, "confidence": 0, "extra": [1, 2]}`, true, false, 0, ""},
		{`{"related": true, "confidence": 1}`, true, true, 1, ""},
		{``, false, false, 0, "not the JSON asked for"},
		{`Sure! They are related.`, false, false, 0, "not the JSON asked for"},
		{"```json\n{\"related\": true, \"confidence\": 0.9}\n```", false, false, 0, "not the JSON asked for"},
		{`{"related": true}`, false, false, 0, "needs related (true or false) and confidence"},
		{`{"confidence": 0.9}`, false, false, 0, "needs related"},
		{`{"related": true, "confidence": 1.5}`, false, false, 0, "confidence (0 to 1)"},
		{`{"related": true, "confidence": -0.1}`, false, false, 0, "confidence (0 to 1)"},
		{`{"related": "yes", "confidence": 0.9}`, false, false, 0, "not the JSON asked for"},
		{`{"related": true, "confidence": "high"}`, false, false, 0, "not the JSON asked for"},
		{`{"related": true, "confidence": null}`, false, false, 0, "needs related"},
		{`[true, 0.9]`, false, false, 0, "not the JSON asked for"},
		{`{"related": true, "confidence": 0.9} trailing`, false, false, 0, "not the JSON asked for"},
		{`{"related": true, "confidence": 0.9, "key_signals": "weather"}`, false, false, 0, "not the JSON asked for"},
	}
	for _, c := range cases {
		a := judgeText(c.answer)
		checkAssessment(t, c.answer, a)
		if a.Available != c.available || a.Related != c.related || a.Confidence != c.conf || !strings.Contains(a.Error, c.errSays) {
			t.Errorf("%q: got %+v; want available %v related %v confidence %v, error saying %q", c.answer, a, c.available, c.related, c.conf, c.errSays)
		}
	}
	// A long answer is quoted cut, not whole.
	long := strings.Repeat("not json ", 500)
	if a := judgeText(long); len(a.Error) > 600 || !strings.Contains(a.Error, "its answer") {
		t.Errorf("the error quotes %d bytes of a %d-byte answer", len(a.Error), len(long))
	}
	// The model failing, and missing the deadline.
	a := judge(context.Background(), answering{err: errors.New("connection refused")}, judgePrompt, "s", "m", time.Minute)
	checkAssessment(t, "(model error)", a)
	if !strings.Contains(a.Error, "connection refused") {
		t.Errorf("model error: %+v", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a = judge(ctx, answering{err: context.Canceled}, judgePrompt, "s", "m", time.Minute)
	checkAssessment(t, "(deadline)", a)
	if !strings.Contains(a.Error, "deadline") {
		t.Errorf("deadline: %+v", a)
	}
	// No model: a note, not an error.
	if a := judge(context.Background(), llm.Offline{}, judgePrompt, "s", "m", time.Minute); a.Available || a.Note == "" || a.Error != "" {
		t.Errorf("offline: %+v", a)
	}
}

// FuzzJudgeAnswer: whatever the model answers, judging never panics, and the
// assessment is either well formed or unavailable with an error; the
// decision made with it is LINK or DON'T_LINK with probabilities in [0, 1].
func FuzzJudgeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"related": true, "confidence": 0.92, "reasoning": "r", "key_signals": ["a"]}`,
		`{"related": false, "confidence": 0.12}`, `{"related": true}`, `{"related": true, "confidence": 1e308}`,
		`{"related": true, "confidence": -0}`, `{"related": null, "confidence": 0.5}`, `{}`, `null`, `"x"`, `[]`,
		"\xff\xfe", `{"related": true, "confidence": 0.5, "related": false}`, `{"Related": true, "Confidence": 0.5}`,
	} {
		f.Add(s, 0.7, 0.5)
	}
	f.Fuzz(func(t *testing.T, answer string, threshold, algorithmic float64) {
		a := judgeText(answer)
		checkAssessment(t, answer, a)
		if b := judgeText(answer); b.Available != a.Available || b.Error != a.Error || b.Confidence != a.Confidence {
			t.Fatalf("not deterministic: %+v then %+v", a, b)
		}
		if math.IsNaN(threshold) || math.IsNaN(algorithmic) {
			return
		}
		d := Combine(math.Min(math.Max(algorithmic, 0), 1), a, math.Min(math.Max(threshold, 0), 1))
		if d.Decision != Link && d.Decision != DontLink {
			t.Fatalf("decision %q", d.Decision)
		}
		if a.Available != (d.LLM != nil) || d.LLM != nil && (*d.LLM < 0 || *d.LLM > 1) {
			t.Fatalf("llm probability %v for %+v", d.LLM, a)
		}
	})
}
