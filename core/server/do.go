package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/input"
	"github.com/engram-console/engram/core/wire"
)

// handleDo answers POST /v1/do: it reads and checks the request, waits for
// a slot, runs the action and answers with its result object.
func (s *Server) handleDo(w http.ResponseWriter, r *http.Request, p Principal, tcp bool) {
	body, status, err := s.readBody(w, r)
	if err != nil {
		s.refuse(w, r, status, p.Agent, err)
		return
	}
	req, err := decodeDoRequest(body)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, p.Agent, err)
		return
	}
	creq := req.Request()
	if tcp {
		if err := s.allowed(p, req); err != nil {
			s.refuse(w, r, http.StatusForbidden, p.Agent, err)
			return
		}
		creq.Principal = p.Agent
		if creq.Session != "" {
			// A session's NAME picks its id generator: over TCP it is
			// the token's agent, so that no agent can draw from (and
			// disturb) another agent's script's ids.
			creq.Session = p.Agent + "/" + creq.Session[strings.LastIndexByte(creq.Session, '/')+1:]
		}
	} else if creq.Principal == "" {
		creq.Principal = s.e.Agent()
	}
	switch s.acquire(r.Context()) {
	case slotGone:
		return // the client went away while waiting: nobody to answer
	case slotBusy:
		w.Header().Set("Retry-After", "1")
		s.refuse(w, r, http.StatusServiceUnavailable, creq.Principal, errs.New(errs.Unavailable,
			"the owner is busy: %d requests are running and no slot came free within %s; nothing was run; retry in a moment",
			s.lim.MaxConcurrent, s.lim.QueueWait).With(wire.DetailRan, false).With(wire.DetailBusy, true))
		return
	}
	defer func() { <-s.slots }()

	var mu sync.Mutex
	var evs []events.Event
	if req.Events {
		creq.OnEvent = func(ev events.Event) {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		}
	}
	start := time.Now()
	res, doErr := s.e.Do(r.Context(), creq)
	resp := wire.DoResponse{Action: req.Action, OK: doErr == nil, Result: res}
	if req.At == nil {
		// A pinned request took no time on its own clock; the wall time
		// is what a client waiting for it would like to know.
		resp.ElapsedUS = time.Since(start).Microseconds()
	}
	if doErr != nil {
		resp.Result, resp.Error = nil, wire.Body(doErr)
	}
	mu.Lock()
	resp.Events = evs
	mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// readBody reads a request's body within MaxBody and BodyTimeout.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, *errs.Error) {
	tooBig := func() ([]byte, int, *errs.Error) {
		return nil, http.StatusRequestEntityTooLarge, errs.New(errs.Budget,
			"the request body is larger than the limit of %s; nothing was run; split the work into smaller requests",
			input.Size(s.lim.MaxBody)).With("limit", s.lim.MaxBody)
	}
	if r.ContentLength > s.lim.MaxBody {
		return tooBig()
	}
	rc := http.NewResponseController(w)
	// Deadlines are best effort: a ResponseWriter that has none (a test
	// recorder) still reads the body.
	_ = rc.SetReadDeadline(time.Now().Add(s.lim.BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.lim.MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			return tooBig()
		case errors.As(err, &netErr) && netErr.Timeout():
			return nil, http.StatusRequestTimeout, errs.New(errs.Budget,
				"the request body took longer than %s to arrive; nothing was run", s.lim.BodyTimeout)
		}
		return nil, http.StatusBadRequest, errs.New(errs.Parse, "reading the request body: %v; nothing was run", err)
	}
	// The connection may carry another request: no deadline for it.
	_ = rc.SetReadDeadline(time.Time{})
	return body, 0, nil
}

// doFields are DoRequest's JSON fields, sorted.
var doFields = []string{"action", "args", "agent", "at", "client", "events", "idempotency_key", "session", "turn"}

// decodeDoRequest decodes a DoRequest strictly: exact field names, no
// unknown field, each field of its type, an action named. Every error
// names the field and what it should be.
func decodeDoRequest(body []byte) (wire.DoRequest, *errs.Error) {
	var req wire.DoRequest
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return req, errs.New(errs.Validation, `the body is empty; send a JSON object such as {"action": "engine.info"}`)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return req, errs.New(errs.Parse, "the body is not valid JSON at byte %d: %v", syn.Offset, err)
		}
		return req, errs.New(errs.Validation, `the body must be a JSON object such as {"action": "engine.info"}, not %s`, action.JSONKind(body))
	}
	names := make([]string, 0, len(top))
	for k := range top {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		raw := top[k]
		var dst any
		want := "a string"
		switch k {
		case "action":
			dst = &req.Action
		case "agent":
			dst = &req.Agent
		case "turn":
			dst = &req.Turn
		case "session":
			dst = &req.Session
		case "idempotency_key":
			dst = &req.IdempotencyKey
		case "events":
			dst, want = &req.Events, "true or false"
		case "client":
			// The agent client the request is made for (engram mcp sends
			// it): the engine checks its fields' values.
			dst, want = &req.Client, "an object (session, via, tool, call, …)"
			if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
				// Strictly, as the top level: a misspelt field is named,
				// not dropped.
				dec := json.NewDecoder(bytes.NewReader(t))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&req.Client); err != nil {
					return req, errs.New(errs.Validation, "client: %s; it has session, via, name, version, transport, pid, tool and call",
						strings.TrimPrefix(err.Error(), "json: ")).With("field", "client")
				}
				continue
			}
		case "at":
			if err := json.Unmarshal(raw, &req.At); err != nil {
				return req, errs.New(errs.Validation, `at: %s is not an RFC 3339 time; write it like "2025-11-05T10:00:00Z"`, raw).
					With("field", "at")
			}
			continue
		case "args":
			req.Args = raw
			continue
		default:
			e := errs.New(errs.Validation, "unknown field %q in the request (the fields are %s)", k, strings.Join(doFields, ", "))
			if near := action.Nearest(k, doFields); near != "" {
				e = errs.New(errs.Validation, "unknown field %q in the request; did you mean %q? (the fields are %s)", k, near, strings.Join(doFields, ", "))
			}
			return req, e.With("field", k)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return req, errs.New(errs.Validation, "%s: expected %s, got %s", k, want, action.JSONKind(raw)).With("field", k)
		}
	}
	if req.Action == "" {
		return req, errs.New(errs.Validation, `action: required; name the action to run, e.g. "engine.info" (actions.list lists them)`).
			With("field", "action")
	}
	return req, nil
}

// allowed checks a TCP request against its token: the agent it names, the
// token actions, actions naming files, and what a read-only token may run.
func (s *Server) allowed(p Principal, req wire.DoRequest) *errs.Error {
	if req.Agent != "" && req.Agent != p.Agent {
		return errs.New(errs.Permission, "agent: this token acts as %q, not %q; leave agent out or use a token of %q; nothing was run",
			p.Agent, req.Agent, req.Agent).With("field", "agent")
	}
	if strings.HasPrefix(req.Action, "token.") {
		return errs.New(errs.Permission, "%s: tokens are managed only on the owner's machine (engram token ...), never over TCP; nothing was run",
			req.Action)
	}
	acts := s.e.Actions()
	i := slices.IndexFunc(acts, func(a *action.Action) bool { return a.Name == req.Action })
	if i >= 0 && acts[i].NamesFile(req.Args) {
		// A TCP client is an agent, not the person at the owner's
		// machine: it may not make the owner read a file it names.
		return errs.New(errs.Permission, "%s: its arguments name a file on the owner's machine, which only a person there may give (engram --batch, the console); never over TCP; nothing was run",
			req.Action)
	}
	if p.ReadOnly {
		// An unknown action goes on to the engine, which says what it
		// may have meant; it changes nothing either way.
		if i >= 0 && !acts[i].ReadOnly {
			return errs.New(errs.Permission, "%s changes the store, and this token of %q is read-only; nothing was run",
				req.Action, p.Agent)
		}
	}
	return nil
}

// Outcomes of waiting for a slot.
const (
	slotTaken = iota
	slotBusy
	slotGone
)

// acquire waits up to QueueWait for a slot to run an action in.
func (s *Server) acquire(ctx context.Context) int {
	select {
	case s.slots <- struct{}{}:
		return slotTaken
	default:
	}
	t := time.NewTimer(s.lim.QueueWait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return slotTaken
	case <-t.C:
		return slotBusy
	case <-ctx.Done():
		return slotGone
	}
}

// sortSummaries sorts an action list by name.
func sortSummaries(list []wire.ActionSummary) {
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
}
