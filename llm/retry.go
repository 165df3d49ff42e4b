package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Sleeper waits for d or until ctx ends (returning its error). Tests inject
// one that records the waits instead of sleeping.
type Sleeper func(ctx context.Context, d time.Duration) error

// SleepReal is the Sleeper of a running engram.
func SleepReal(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryPolicy says how calls are retried on transient failures (timeouts,
// refused or reset connections, 429, 5xx): exponential backoff with jitter,
// or exactly the server's Retry-After when it sends one.
type RetryPolicy struct {
	// Attempts is the most tries of one call (default 3).
	Attempts int
	// BaseDelay is the wait before the first retry; it doubles each time (default 500ms).
	BaseDelay time.Duration
	// MaxDelay caps the backoff (default 10s).
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After honoured; a server asking for
	// longer gets no retry (default 60s).
	MaxRetryAfter time.Duration
	// Timeout bounds each attempt (0: only the caller's context).
	Timeout time.Duration
	// Sleep waits between attempts (default SleepReal).
	Sleep Sleeper
	// Jitter returns a number in [0, 1) (default math/rand).
	Jitter func() float64
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 3
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 10 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 60 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = SleepReal
	}
	if p.Jitter == nil {
		p.Jitter = rand.Float64
	}
	return p
}

// Backoff is the wait before retry number n (1 for the first retry):
// BaseDelay·2^(n-1), capped at MaxDelay, then jittered into its upper half so
// that clients that failed together do not retry together.
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.withDefaults()
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return d/2 + time.Duration(p.Jitter()*float64(d/2))
}

// WithRetry wraps p so that transient failures are retried per policy, each
// attempt bounded by policy.Timeout. A failed call returns a fresh *Error (a
// copy of the provider's last one) whose Attempts says how many tries were
// made.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	return &retrying{next: p, policy: policy.withDefaults()}
}

type retrying struct {
	next   Provider
	policy RetryPolicy
}

func (r *retrying) Info() Info { return r.next.Info() }

func (r *retrying) Complete(ctx context.Context, req Request) (Response, error) {
	return retry(ctx, r.policy, func(ctx context.Context) (Response, error) { return r.next.Complete(ctx, req) })
}

func (r *retrying) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	return retry(ctx, r.policy, func(ctx context.Context) (EmbedResponse, error) { return r.next.Embed(ctx, req) })
}

func retry[T any](ctx context.Context, p RetryPolicy, call func(context.Context) (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if p.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, p.Timeout)
		}
		out, err := call(actx)
		cancel()
		if err == nil {
			return out, nil
		}
		var provided *Error
		if !errors.As(err, &provided) {
			return out, err // not a model failure (e.g. a ParseError): nothing to retry
		}
		// Record the attempts on a copy: the provider's error value may be
		// shared between calls (a scripted fake's is), and writing to it
		// would race and leak one call's count into another's.
		e := new(Error)
		*e = *provided
		e.Attempts = attempt
		if !e.Transient || attempt >= p.Attempts || ctx.Err() != nil {
			return out, e
		}
		wait := p.Backoff(attempt)
		if e.RetryAfter > 0 {
			if e.RetryAfter > p.MaxRetryAfter {
				e.Msg += fmt.Sprintf(" (the server asked to wait %s before retrying, longer than engram waits)", e.RetryAfter)
				return out, e
			}
			wait = e.RetryAfter
		}
		if p.Sleep(ctx, wait) != nil {
			return out, e // cancelled while waiting: the last failure stands
		}
	}
}

// CheckJSON wraps p so that an answer to a JSON request is checked: an
// answer fenced as a ```json block is unwrapped, and one that is not JSON at
// all fails with a *ParseError carrying the raw answer.
func CheckJSON(p Provider) Provider { return jsonChecked{p} }

type jsonChecked struct{ Provider }

func (j jsonChecked) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := j.Provider.Complete(ctx, req)
	if err != nil || !req.WantsJSON() {
		return resp, err
	}
	text, err := ExtractJSON(resp.Text)
	if err != nil {
		return resp, err
	}
	resp.Text = text
	return resp, nil
}
