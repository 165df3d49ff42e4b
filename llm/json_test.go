package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

func TestExtractJSON(t *testing.T) {
	for _, c := range []struct{ answer, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{`  [1, 2, 3]` + "\n", `[1, 2, 3]`},
		{`"just a string"`, `"just a string"`},
		{"```json\n{\"subtasks\": [\"a\"]}\n```", `{"subtasks": ["a"]}`},
		{"```\n[1]\n```\n", `[1]`},
		{"\n```JSON\n  {\"x\": true}  \n```", `{"x": true}`},
	} {
		got, err := llm.ExtractJSON(c.answer)
		if err != nil || got != c.want {
			t.Errorf("ExtractJSON(%q) = (%q, %v), want %q", c.answer, got, err, c.want)
		}
	}
}

func TestExtractJSONRejects(t *testing.T) {
	for _, c := range []struct{ answer, reason string }{
		{"", "the answer is empty"},
		{"   \n ", "the answer is empty"},
		{"```json\n```", "the answer is empty"},
		{"Sure! Here is your plan.", "invalid JSON at byte 1: invalid character 'S'"},
		{`{"a": 1`, "invalid JSON"},
		{"```json\nnot json\n```", "invalid JSON"},
		{`{"a": 1} trailing`, "invalid JSON"},
	} {
		_, err := llm.ExtractJSON(c.answer)
		var pe *llm.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("ExtractJSON(%q): %v, want a *ParseError", c.answer, err)
			continue
		}
		if pe.Raw != c.answer || !strings.Contains(pe.Reason, c.reason) {
			t.Errorf("ExtractJSON(%q): raw %q reason %q, want the answer and %q", c.answer, pe.Raw, pe.Reason, c.reason)
		}
	}
}

func TestParseErrorIsTruncatedAndSpeaksJSON(t *testing.T) {
	answer := "I think the plan should be: " + strings.Repeat("first do this, then that; ", 200) // ~5,000 characters
	if len(answer) < 5000 {
		answer += strings.Repeat("x", 5000-len(answer))
	}
	_, err := llm.ExtractJSON(answer)
	var pe *llm.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("%v, want a *ParseError", err)
	}
	if pe.Raw != answer {
		t.Errorf("Raw is %d bytes, want the whole %d-byte answer", len(pe.Raw), len(answer))
	}
	display := pe.Display()
	if len(display) > 400 || !strings.HasPrefix(display, "I think the plan") || !strings.Contains(display, "more bytes)") {
		t.Errorf("Display() is %d bytes: %q", len(display), display)
	}
	msg := err.Error()
	if len(msg) > 600 {
		t.Errorf("Error() is %d bytes; a 5,000-byte answer should be cut", len(msg))
	}
	for _, internal := range []string{"Go struct", "unmarshal", "Unmarshal", "json.", "*llm", "interface {}", "map["} {
		if strings.Contains(msg, internal) {
			t.Errorf("Error() mentions %q: %s", internal, msg)
		}
	}
	if !strings.Contains(msg, "not the JSON asked for") || !strings.Contains(msg, "invalid JSON at byte 1") {
		t.Errorf("Error() should say what is wrong in JSON's terms: %s", msg)
	}
}

func TestTruncate(t *testing.T) {
	if got := llm.Truncate("short", 10); got != "short" {
		t.Errorf("%q", got)
	}
	if got := llm.Truncate("abcdefghij", 4); got != "abcd… (6 more bytes)" {
		t.Errorf("%q", got)
	}
	// Never cuts inside a rune.
	s := strings.Repeat("é", 10) // 2 bytes each
	got := llm.Truncate(s, 5)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "éé…") || !strings.Contains(got, "(16 more bytes)") {
		t.Errorf("Truncate(%q, 5) = %q", s, got)
	}
}

func TestCheckJSON(t *testing.T) {
	ctx := context.Background()
	ask := func(answer string, json bool) (llm.Response, error) {
		req := llm.Prompt("", "x")
		req.JSON = json
		return llm.CheckJSON(llmtest.New(answer)).Complete(ctx, req)
	}
	// Fenced JSON is unwrapped.
	resp, err := ask("```json\n{\"a\": 1}\n```", true)
	if err != nil || resp.Text != `{"a": 1}` {
		t.Errorf("(%q, %v)", resp.Text, err)
	}
	// Prose is a ParseError carrying the whole answer.
	_, err = ask("No.", true)
	var pe *llm.ParseError
	if !errors.As(err, &pe) || pe.Raw != "No." {
		t.Errorf("%v, want a *ParseError with Raw %q", err, "No.")
	}
	// An empty answer to a JSON request.
	if _, err = ask("", true); !errors.As(err, &pe) || !strings.Contains(pe.Reason, "empty") {
		t.Errorf("%v, want a *ParseError for an empty answer", err)
	}
	// A request that did not ask for JSON is not checked, nor changed.
	resp, err = ask("No.", false)
	if err != nil || resp.Text != "No." {
		t.Errorf("(%q, %v): a non-JSON request is not checked", resp.Text, err)
	}
	resp, err = ask("```json\n{}\n```", false)
	if err != nil || resp.Text != "```json\n{}\n```" {
		t.Errorf("(%q, %v): a non-JSON answer is passed through as is", resp.Text, err)
	}
	// A schema implies JSON.
	req := llm.Prompt("", "x")
	req.Schema = []byte(`{"type": "object"}`)
	if _, err := llm.CheckJSON(llmtest.New("nope")).Complete(ctx, req); !errors.As(err, &pe) {
		t.Errorf("%v: a Schema request is checked", err)
	}
	// Failures pass through untouched, and Embed and Info are the wrapped provider's.
	model := &llmtest.Scripted{Answers: []llmtest.Answer{llmtest.Transient("busy")}}
	if _, err := llm.CheckJSON(model).Complete(ctx, req); llmError(t, err).Msg != "busy" {
		t.Errorf("%v", err)
	}
	if info := llm.CheckJSON(model).Info(); info.Provider != "scripted" {
		t.Errorf("info %+v", info)
	}
}

func TestParseErrorThroughNew(t *testing.T) {
	// A live provider built by New checks JSON answers.
	srv := ollamaServer(t, fixed("Here you go: the plan is to start."))
	req := llm.Prompt("", "plan")
	req.JSON = true
	_, err := ollama(t, srv, llm.Config{Retries: 2}).Complete(context.Background(), req)
	var pe *llm.ParseError
	if !errors.As(err, &pe) || pe.Raw != "Here you go: the plan is to start." {
		t.Fatalf("%v, want a *ParseError", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests: a wrong answer is not retried", n)
	}
}
