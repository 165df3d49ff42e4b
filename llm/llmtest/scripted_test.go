package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

func TestScriptedAnswersInOrder(t *testing.T) {
	s := llmtest.New("first", "second")
	ctx := context.Background()
	for i, want := range []string{"first", "second"} {
		resp, err := s.Complete(ctx, llm.Prompt("sys", fmt.Sprint("question ", i)))
		if err != nil || resp.Text != want {
			t.Fatalf("call %d: (%+v, %v), want %q", i+1, resp, err, want)
		}
		if resp.Model != "scripted" || resp.Usage.CompletionTokens != llm.CountTokens(want) ||
			resp.Usage.PromptTokens != llm.CountTokens("sys")+llm.CountTokens(fmt.Sprint("question ", i)) {
			t.Errorf("call %d: %+v", i+1, resp)
		}
	}
	if s.Calls() != 2 {
		t.Errorf("calls %d", s.Calls())
	}
}

func TestScriptedRunningOutNamesTheRequest(t *testing.T) {
	s := llmtest.New("only")
	ctx := context.Background()
	if _, err := s.Complete(ctx, llm.Prompt("", "one")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Complete(ctx, llm.Prompt("", "Decompose: build a house"))
	if err == nil {
		t.Fatal("a third answer from a script of one")
	}
	for _, want := range []string{"call 2", "only 1 scripted", `"Decompose: build a house"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q should say %s", err, want)
		}
	}
	var e *llm.Error
	if errors.As(err, &e) {
		t.Errorf("running out is a test bug, not a model failure a retry would hide: %v", err)
	}
	if s.Calls() != 2 {
		t.Errorf("calls %d: the failed call still counts", s.Calls())
	}
}

func TestScriptedFailures(t *testing.T) {
	boom := errors.New("boom")
	s := &llmtest.Scripted{Answers: []llmtest.Answer{llmtest.Fail(boom), llmtest.Transient("overloaded"), llmtest.Text("ok")}}
	ctx := context.Background()
	if _, err := s.Complete(ctx, llm.Prompt("", "x")); err != boom {
		t.Errorf("%v, want boom", err)
	}
	_, err := s.Complete(ctx, llm.Prompt("", "x"))
	var e *llm.Error
	if !errors.As(err, &e) || !e.Transient || e.Msg != "overloaded" {
		t.Errorf("%v, want a transient *llm.Error", err)
	}
	if resp, err := s.Complete(ctx, llm.Prompt("", "x")); err != nil || resp.Text != "ok" {
		t.Errorf("(%+v, %v)", resp, err)
	}
}

func TestScriptedFunc(t *testing.T) {
	s := &llmtest.Scripted{Model: "fake-1", Func: func(req llm.Request) llmtest.Answer {
		if req.JSON {
			return llmtest.Text(`{"subtasks": []}`)
		}
		return llmtest.Text("you said " + req.Messages[0].Content)
	}}
	ctx := context.Background()
	for range 3 { // a function never runs out
		resp, err := s.Complete(ctx, llm.Prompt("", "hi"))
		if err != nil || resp.Text != "you said hi" || resp.Model != "fake-1" {
			t.Fatalf("(%+v, %v)", resp, err)
		}
	}
	req := llm.Prompt("", "plan")
	req.JSON = true
	if resp, _ := s.Complete(ctx, req); resp.Text != `{"subtasks": []}` {
		t.Errorf("%q", resp.Text)
	}
	if s.Calls() != 4 {
		t.Errorf("calls %d", s.Calls())
	}
	if info := s.Info(); info != (llm.Info{Provider: "scripted", Model: "fake-1", EmbedModel: "fake-1"}) {
		t.Errorf("info %+v", info)
	}
}

func TestScriptedRecordsRequests(t *testing.T) {
	s := llmtest.New("a", "b")
	ctx := context.Background()
	r1 := llm.Prompt("system one", "first")
	r2 := llm.Request{Messages: []llm.Message{{Role: "user", Content: "second"}}, JSON: true, Model: "m"}
	for _, r := range []llm.Request{r1, r2} {
		if _, err := s.Complete(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got := s.Requests()
	if !reflect.DeepEqual(got, []llm.Request{r1, r2}) {
		t.Errorf("requests %+v", got)
	}
	got[0].System = "changed"
	if s.Requests()[0].System != "system one" {
		t.Error("Requests returned the fake's own slice")
	}
}

func TestScriptedEmbed(t *testing.T) {
	s := &llmtest.Scripted{}
	_, err := s.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"x"}})
	var e *llm.Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "EmbedFunc") {
		t.Errorf("%v: embedding without an EmbedFunc should say so", err)
	}
	s.EmbedFunc = func(req llm.EmbedRequest) ([][]float32, error) {
		out := make([][]float32, len(req.Texts))
		for i, text := range req.Texts {
			out[i] = []float32{float32(len(text))}
		}
		return out, nil
	}
	resp, err := s.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"ab", "abc"}})
	if err != nil || !reflect.DeepEqual(resp.Vectors, [][]float32{{2}, {3}}) || resp.Model != "scripted" {
		t.Errorf("(%+v, %v)", resp, err)
	}
	if reqs := s.EmbedRequests(); len(reqs) != 2 || !reflect.DeepEqual(reqs[1].Texts, []string{"ab", "abc"}) {
		t.Errorf("embed requests %+v", reqs)
	}
	if s.Calls() != 0 {
		t.Errorf("Embed counted as a Complete call")
	}
}

func TestScriptedHonoursCancellation(t *testing.T) {
	s := llmtest.New("never")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Complete(ctx, llm.Prompt("", "x"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v, want the cancellation", err)
	}
	if s.Calls() != 0 {
		t.Errorf("a cancelled call used up answer %d", s.Calls())
	}
	if resp, err := s.Complete(context.Background(), llm.Prompt("", "x")); err != nil || resp.Text != "never" {
		t.Errorf("(%+v, %v): the answer should still be there", resp, err)
	}
}

func TestScriptedConcurrentUse(t *testing.T) {
	const n = 50
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprint("answer ", i)
	}
	s := llmtest.New(texts...)
	var mu sync.Mutex
	got := map[string]bool{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := s.Complete(context.Background(), llm.Prompt("", fmt.Sprint("q", i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[resp.Text] = true
			mu.Unlock()
			s.Calls()
			s.Requests()
		})
	}
	wg.Wait()
	if len(got) != n || s.Calls() != n || len(s.Requests()) != n {
		t.Errorf("%d distinct answers, %d calls, %d requests; want %d each", len(got), s.Calls(), len(s.Requests()), n)
	}
}
