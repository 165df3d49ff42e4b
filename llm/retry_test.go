package llm_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

const okChat = `{"model":"llama3.2","message":{"role":"assistant","content":"fine"},"done":true,"prompt_eval_count":3,"eval_count":1}`

func unavailable(status int) reply {
	return reply{Status: status, Body: `{"error":"server busy"}`}
}

func TestRetryAfterSecondsIsHonouredExactly(t *testing.T) {
	srv := ollamaServer(t, fixed("fine")).then(reply{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: `{"error":"too many requests"}`})
	sl := &sleeper{}
	resp, err := ollama(t, srv, llm.Config{Retries: 2, Sleep: sl.Sleep}).Complete(context.Background(), llm.Prompt("", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "fine" {
		t.Errorf("text %q", resp.Text)
	}
	if w := sl.Waits(); !reflect.DeepEqual(w, []time.Duration{2 * time.Second}) {
		t.Errorf("waits %v, want exactly [2s]", w)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	now := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	srv := ollamaServer(t, fixed("fine")).then(reply{Status: 503,
		Header: map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, Body: `{"error":"loading model"}`})
	sl := &sleeper{}
	p := ollama(t, srv, llm.Config{Retries: 1, Sleep: sl.Sleep, Now: func() time.Time { return now }})
	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatal(err)
	}
	if w := sl.Waits(); !reflect.DeepEqual(w, []time.Duration{7 * time.Second}) {
		t.Errorf("waits %v, want [7s]", w)
	}
}

func TestRetryAfterInThePastFallsBackToBackoff(t *testing.T) {
	now := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	srv := ollamaServer(t, fixed("fine")).then(reply{Status: 503,
		Header: map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, Body: `{}`})
	sl := &sleeper{}
	p := ollama(t, srv, llm.Config{Retries: 1, Sleep: sl.Sleep, Now: func() time.Time { return now }})
	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatal(err)
	}
	// The default policy's first backoff: 500ms jittered into [250ms, 500ms).
	if w := sl.Waits(); len(w) != 1 || w[0] < 250*time.Millisecond || w[0] >= 500*time.Millisecond {
		t.Errorf("waits %v, want one backoff in [250ms, 500ms)", w)
	}
}

func TestRetryAfterTooLongIsNotRetried(t *testing.T) {
	srv := ollamaServer(t, fixed("fine")).then(reply{Status: 429, Header: map[string]string{"Retry-After": "3600"}, Body: `{"error":"rate limit"}`})
	sl := &sleeper{}
	_, err := ollama(t, srv, llm.Config{Retries: 3, Sleep: sl.Sleep}).Complete(context.Background(), llm.Prompt("", "x"))
	e := llmError(t, err)
	if e.Attempts != 1 || !e.Transient || e.Status != 429 || e.RetryAfter != time.Hour {
		t.Errorf("attempts %d transient %v status %d retry-after %v", e.Attempts, e.Transient, e.Status, e.RetryAfter)
	}
	if len(sl.Waits()) != 0 || len(srv.requests()) != 1 {
		t.Errorf("waited %v over %d requests; a Retry-After beyond MaxRetryAfter is not waited for", sl.Waits(), len(srv.requests()))
	}
	if !strings.Contains(err.Error(), "asked to wait 1h0m0s") {
		t.Errorf("error %q should say how long the server asked to wait", err)
	}
}

func TestServerErrorsRetriedWithExponentialBackoff(t *testing.T) {
	for _, status := range []int{500, 502, 503} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := ollamaServer(t, fixed("fine"))
			for range 5 {
				srv.then(unavailable(status))
			}
			sl := &sleeper{}
			policy := llm.RetryPolicy{Attempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: 500 * time.Millisecond,
				Sleep: sl.Sleep, Jitter: func() float64 { return 0 }}
			p := llm.WithRetry(bareOllama(t, srv), policy)
			_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
			e := llmError(t, err)
			if e.Attempts != 5 || !e.Transient || e.Status != status {
				t.Errorf("attempts %d transient %v status %d; want 5, true, %d", e.Attempts, e.Transient, e.Status, status)
			}
			if !strings.Contains(err.Error(), "failed after 5 attempts") {
				t.Errorf("error %q should say how many attempts", err)
			}
			// BaseDelay·2^(n-1), capped at MaxDelay, with jitter 0 at the bottom of the upper half.
			want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond}
			if w := sl.Waits(); !reflect.DeepEqual(w, want) {
				t.Errorf("waits %v, want %v", w, want)
			}
			if n := len(srv.requests()); n != 5 {
				t.Errorf("%d requests, want 5", n)
			}
		})
	}
}

// bareOllama is the Ollama provider without engram's retries: the provider
// llm.New builds with one attempt.
func bareOllama(t *testing.T, srv *wire) llm.Provider {
	t.Helper()
	p, err := llm.New(llm.Config{Provider: "ollama", URL: srv.URL, HTTPClient: srv.Client(), Retries: 0})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		jitter float64
		want   []time.Duration // retries 1..6
	}{
		{0, []time.Duration{500, 1000, 2000, 4000, 5000, 5000}},
		{0.5, []time.Duration{750, 1500, 3000, 6000, 7500, 7500}},
		{0.999, []time.Duration{999500, 1999000, 3998000, 7996000, 9995000, 9995000}}, // in µs below
	} {
		p := llm.RetryPolicy{BaseDelay: time.Second, MaxDelay: 10 * time.Second, Jitter: func() float64 { return c.jitter }}
		unit := time.Millisecond
		if c.jitter == 0.999 {
			unit = time.Microsecond
		}
		for n, w := range c.want {
			if got := p.Backoff(n + 1); got != w*unit {
				t.Errorf("jitter %v: Backoff(%d) = %v, want %v", c.jitter, n+1, got, w*unit)
			}
		}
	}
	// Defaults: 500ms base, 10s cap; and a cap below the base wins.
	zero := func() float64 { return 0 }
	if got := (llm.RetryPolicy{Jitter: zero}).Backoff(1); got != 250*time.Millisecond {
		t.Errorf("default Backoff(1) = %v, want 250ms", got)
	}
	if got := (llm.RetryPolicy{Jitter: zero}).Backoff(60); got != 5*time.Second {
		t.Errorf("default Backoff(60) = %v, want 5s (no overflow)", got)
	}
	if got := (llm.RetryPolicy{BaseDelay: time.Minute, MaxDelay: time.Second, Jitter: zero}).Backoff(1); got != 500*time.Millisecond {
		t.Errorf("Backoff with base above the cap = %v, want 500ms", got)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := ollamaServer(t, fixed("fine")).then(reply{Status: status, Body: `{"error":"nope"}`})
			sl := &sleeper{}
			_, err := ollama(t, srv, llm.Config{Retries: 4, Sleep: sl.Sleep}).Complete(context.Background(), llm.Prompt("", "x"))
			e := llmError(t, err)
			if e.Attempts != 1 || e.Transient || e.Status != status {
				t.Errorf("attempts %d transient %v status %d; want 1, false, %d", e.Attempts, e.Transient, e.Status, status)
			}
			if len(srv.requests()) != 1 || len(sl.Waits()) != 0 {
				t.Errorf("%d requests, waits %v", len(srv.requests()), sl.Waits())
			}
		})
	}
}

func TestConnectionRefusedIsTransientAndRetried(t *testing.T) {
	addr := closedAddr(t)
	sl := &sleeper{}
	p, err := llm.New(llm.Config{Provider: "ollama", URL: "http://" + addr, Retries: 2, Sleep: sl.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), llm.Prompt("", "x"))
	e := llmError(t, err)
	if !e.Transient || e.Attempts != 3 || e.Status != 0 {
		t.Errorf("transient %v attempts %d status %d; want true, 3, 0", e.Transient, e.Attempts, e.Status)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not wrap ECONNREFUSED", err)
	}
	if !strings.Contains(e.Msg, "connection refused") || !strings.Contains(e.Msg, "ollama serve") || !strings.Contains(e.Msg, "OLLAMA_HOST") {
		t.Errorf("message %q should say nothing listens and how to point engram at Ollama", e.Msg)
	}
	if len(sl.Waits()) != 2 {
		t.Errorf("waits %v, want 2", sl.Waits())
	}
}

func TestConnectionCutIsTransient(t *testing.T) {
	srv := newWire(t, func(seen) reply { return reply{Status: 200, Body: okChat} })
	// The first request's connection is hijacked and closed without an answer.
	cut := true
	var mu sync.Mutex
	inner := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := cut
		cut = false
		mu.Unlock()
		if first {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			if err := conn.Close(); err != nil {
				t.Error(err)
			}
			return
		}
		inner.ServeHTTP(w, r)
	})
	sl := &sleeper{}
	resp, err := ollama(t, srv, llm.Config{Retries: 1, Sleep: sl.Sleep}).Complete(context.Background(), llm.Prompt("", "x"))
	if err != nil {
		t.Fatalf("a cut connection should be retried: %v", err)
	}
	if resp.Text != "fine" || len(sl.Waits()) != 1 {
		t.Errorf("text %q, waits %v", resp.Text, sl.Waits())
	}
}

func TestPerAttemptTimeoutIsTransientAndRetried(t *testing.T) {
	srv := ollamaServer(t, fixed("fine"))
	srv.hang()
	sl := &sleeper{}
	p := ollama(t, srv, llm.Config{Timeout: 50 * time.Millisecond, Retries: 1, Sleep: sl.Sleep})
	_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
	e := llmError(t, err)
	if !e.Transient || e.Attempts != 2 || !strings.Contains(e.Msg, "did not answer in time") {
		t.Errorf("error %+v; want a transient timeout after 2 attempts", e)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
	if n := len(srv.requests()); n != 2 || len(sl.Waits()) != 1 {
		t.Errorf("%d requests, waits %v", n, sl.Waits())
	}
}

func TestRetryPolicyTimeoutBoundsEachAttempt(t *testing.T) {
	srv := ollamaServer(t, fixed("fine"))
	srv.hang()
	sl := &sleeper{}
	p := llm.WithRetry(bareOllama(t, srv), llm.RetryPolicy{Attempts: 3, Timeout: 50 * time.Millisecond, Sleep: sl.Sleep})
	_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
	if e := llmError(t, err); !e.Transient || e.Attempts != 3 {
		t.Errorf("error %+v", e)
	}
	if len(srv.requests()) != 3 {
		t.Errorf("%d requests, want 3", len(srv.requests()))
	}
}

func TestCallerCancelStopsRetrying(t *testing.T) {
	srv := ollamaServer(t, fixed("fine"))
	srv.hang()
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sleeper{}
	p := ollama(t, srv, llm.Config{Retries: 5, Sleep: sl.Sleep}) // no per-attempt timeout
	done := make(chan error, 1)
	go func() {
		_, err := p.Complete(ctx, llm.Prompt("", "x"))
		done <- err
	}()
	waitFor(t, func() bool { return len(srv.requests()) == 1 })
	cancel()
	err := <-done
	e := llmError(t, err)
	if e.Attempts != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("error %+v (attempts %d); want the cancellation after 1 attempt", err, e.Attempts)
	}
	if len(sl.Waits()) != 0 || len(srv.requests()) != 1 {
		t.Errorf("retried after the caller gave up: %d requests, waits %v", len(srv.requests()), sl.Waits())
	}
}

func TestCancelDuringBackoffStops(t *testing.T) {
	model := &llmtest.Scripted{Func: func(llm.Request) llmtest.Answer { return llmtest.Transient("busy") }}
	ctx, cancel := context.WithCancel(context.Background())
	var waits int
	sleep := func(ctx context.Context, d time.Duration) error {
		waits++
		cancel() // the caller gives up while we wait
		return ctx.Err()
	}
	_, err := llm.WithRetry(model, llm.RetryPolicy{Attempts: 5, Sleep: sleep}).Complete(ctx, llm.Prompt("", "x"))
	e := llmError(t, err)
	if e.Attempts != 1 || waits != 1 || model.Calls() != 1 || e.Msg != "busy" {
		t.Errorf("attempts %d, waits %d, calls %d, message %q; want the first failure to stand", e.Attempts, waits, model.Calls(), e.Msg)
	}
}

func TestSuccessfulRetryReturnsTheAnswer(t *testing.T) {
	model := &llmtest.Scripted{Answers: []llmtest.Answer{llmtest.Transient("503"), llmtest.Transient("503"), llmtest.Text("third time")}}
	sl := &sleeper{}
	resp, err := llm.WithRetry(model, llm.RetryPolicy{Attempts: 3, Sleep: sl.Sleep}).Complete(context.Background(), llm.Prompt("", "x"))
	if err != nil || resp.Text != "third time" {
		t.Fatalf("(%+v, %v)", resp, err)
	}
	if model.Calls() != 3 || len(sl.Waits()) != 2 {
		t.Errorf("calls %d, waits %v", model.Calls(), sl.Waits())
	}
}

func TestNonModelErrorsAreNotRetried(t *testing.T) {
	boom := errors.New("boom")
	model := &llmtest.Scripted{Func: func(llm.Request) llmtest.Answer { return llmtest.Fail(boom) }}
	_, err := llm.WithRetry(model, llm.RetryPolicy{Attempts: 3, Sleep: (&sleeper{}).Sleep}).Complete(context.Background(), llm.Prompt("", "x"))
	if err != boom || model.Calls() != 1 {
		t.Errorf("error %v after %d calls; want boom after 1", err, model.Calls())
	}
}

func TestEmbedIsRetriedToo(t *testing.T) {
	srv := ollamaServer(t, echo).then(unavailable(502))
	sl := &sleeper{}
	resp, err := ollama(t, srv, llm.Config{Retries: 1, Sleep: sl.Sleep}).Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a"}})
	if err != nil || len(resp.Vectors) != 1 || len(sl.Waits()) != 1 {
		t.Errorf("(%+v, %v), waits %v", resp, err, sl.Waits())
	}
}

// A provider may hand the same *Error to several calls (a scripted fake
// does); the retry layer must not write to it, or concurrent calls race and
// one call's attempt count leaks into another's.
func TestRetryDoesNotMutateTheProvidersError(t *testing.T) {
	shared := llmtest.Transient("busy")
	model := &llmtest.Scripted{Func: func(llm.Request) llmtest.Answer { return shared }}
	p := llm.WithRetry(model, llm.RetryPolicy{Attempts: 3, Sleep: (&sleeper{}).Sleep})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
			if e := llmError(t, err); e.Attempts != 3 {
				t.Errorf("attempts %d, want 3", e.Attempts)
			}
		})
	}
	wg.Wait()
	if orig := shared.Err.(*llm.Error); orig.Attempts != 0 || orig.Msg != "busy" {
		t.Errorf("the provider's error was changed: %+v", orig)
	}
}

func TestErrorMessages(t *testing.T) {
	for _, c := range []struct {
		e    llm.Error
		want string
	}{
		{llm.Error{Provider: "ollama", Op: "chat", Attempts: 1, Status: 404, Msg: "not found"}, "ollama chat failed (HTTP 404): not found"},
		{llm.Error{Provider: "openai", Op: "embed", Attempts: 3, Msg: "timeout"}, "openai embed failed after 3 attempts: timeout"},
		{llm.Error{Provider: "replay", Msg: "miss"}, "replay failed: miss"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// waitFor polls cond (without sleeping for real long: the loop yields).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
