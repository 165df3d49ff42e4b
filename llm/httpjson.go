package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// jsonHTTP is the little both wire protocols share: POST a JSON body, decode
// a JSON answer, and turn every failure into an *Error that says whether it
// is worth retrying. (Why not the vendors' client libraries: see docs/llm.md.)
type jsonHTTP struct {
	provider string
	baseURL  string // without a trailing slash
	header   http.Header
	client   *http.Client
	// unreachable is the hint given when nothing answers at baseURL.
	unreachable string
	// now reads the clock for Retry-After dates.
	now func() time.Time
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// post sends body to path and decodes a 2xx answer into out.
func (h *jsonHTTP) post(ctx context.Context, op, path string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return &Error{Provider: h.provider, Op: op, Msg: "encoding the request: " + err.Error(), Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.baseURL+path, bytes.NewReader(payload))
	if err != nil {
		return &Error{Provider: h.provider, Op: op, Msg: fmt.Sprintf("bad server address %q: %v", h.baseURL, err), Err: err}
	}
	for k, vs := range h.header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return h.transportError(ctx, op, err)
	}
	defer func() { _ = resp.Body.Close() }() // a response body: nothing to lose on close
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return h.statusError(op, resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return h.transportError(ctx, op, err)
		}
		return &Error{Provider: h.provider, Op: op, Status: resp.StatusCode, Err: err,
			Msg: fmt.Sprintf("the server at %s did not answer in the %s protocol: %v", h.baseURL, h.provider, err)}
	}
	return nil
}

// transportError classifies a failure to get any answer.
func (h *jsonHTTP) transportError(ctx context.Context, op string, err error) error {
	e := &Error{Provider: h.provider, Op: op, Err: err, Transient: true}
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		e.Msg = "the model did not answer in time (raise --llm-timeout for slow models)"
	case errors.Is(ctx.Err(), context.Canceled):
		e.Msg = "cancelled"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		e.Transient = false
		e.Msg = fmt.Sprintf("no such host %q; %s", dnsErr.Name, h.unreachable)
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Msg = fmt.Sprintf("nothing is listening at %s (connection refused); %s", h.baseURL, h.unreachable)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		e.Msg = fmt.Sprintf("the connection to %s was cut: %v", h.baseURL, err)
	case errors.As(err, &netErr) && netErr.Timeout():
		e.Msg = "the model did not answer in time (raise --llm-timeout for slow models)"
	default:
		e.Msg = fmt.Sprintf("cannot reach %s: %v", h.baseURL, err)
	}
	return e
}

// statusError turns a non-2xx answer into an *Error carrying the server's
// own message.
func (h *jsonHTTP) statusError(op string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{Provider: h.provider, Op: op, Status: resp.StatusCode}
	e.Transient = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), h.now())
	e.Msg = errorMessage(body)
	if e.Msg == "" {
		e.Msg = http.StatusText(resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Msg += " (check the API key: OPENAI_API_KEY)"
	case http.StatusNotFound:
		e.Msg += " (check --model and --llm-url)"
	}
	return e
}

// errorMessage digs the message out of an error body: {"error": "..."}
// (Ollama), {"error": {"message": "..."}} (OpenAI), {"message": "..."}, or
// the text itself.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		if v.Message != "" {
			return v.Message
		}
	}
	return Truncate(strings.TrimSpace(string(body)), 300)
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
