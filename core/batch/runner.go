package batch

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/input"
	"github.com/engram-console/engram/core/kit"
)

// Options change how a script runs.
type Options struct {
	// FailFast stops at the first step that did not pass.
	FailFast bool
	// Events interleaves the engine's events with the results.
	Events bool
	// Principal acts for the steps without an "as" (empty: the engine's
	// agent). The tour's script runs as whoever ran tour.load.
	Principal string
}

// Summary counts what a run did.
type Summary struct {
	Steps  int // steps reported (including malformed lines)
	Passed int
	Failed int
	// FirstFailure is the line of the first step that did not pass (0: none).
	FirstFailure int
	// Stopped: the run ended early (--fail-fast or cancellation).
	Stopped bool
	// Full counts the steps refused with StorageFull (exit status 4).
	Full int
}

// OK reports whether every step passed.
func (s Summary) OK() bool { return s.Failed == 0 && !s.Stopped }

// ErrUnreadable wraps failures to read the script itself (exit status 2).
var ErrUnreadable = errors.New("cannot read the script")

// Result is one output line.
type Result struct {
	ID        string          `json:"id,omitempty"`
	Action    string          `json:"action,omitempty"`
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *ErrorBody      `json:"error,omitempty"`
	Expected  *bool           `json:"expected,omitempty"`
	ElapsedUS int64           `json:"elapsed_us"`
	Line      int             `json:"line"`
}

// ErrorBody is a failed step's error.
type ErrorBody struct {
	Kind    errs.Kind      `json:"kind"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Executor runs a script's steps: a conn.Conn (the engine in process, or
// the owner of the data directory over its socket) has what it needs.
type Executor interface {
	// Do runs one step as a request (its at, session and events too).
	Do(ctx context.Context, req conn.Request) (json.RawMessage, error)
	// Now is the engine clock, for a step's elapsed time.
	Now() time.Time
	// Agent acts for steps without an "as" and names the script's session.
	Agent() string
}

// Runner runs scripts against one engine.
type Runner struct {
	x    Executor
	out  io.Writer
	opts Options
	// session names this run's steps (conn.Request.Session): they run
	// alone and draw ids from a generator of their own, so the script
	// prints the same bytes beside other clients. Empty inside an action
	// (the tour), whose steps are parts of that action.
	session string

	done    map[string]stepOutcome
	mu      sync.Mutex // one writer of output lines at a time
	summary Summary
}

// NewRunner returns a runner writing result lines to out.
func NewRunner(x Executor, out io.Writer, opts Options) *Runner {
	agent := cmp.Or(opts.Principal, x.Agent())
	return &Runner{x: x, out: out, opts: opts, done: map[string]stepOutcome{}, session: agent + "/" + rand.Text()}
}

// NewEnvRunner returns a runner over an engine's services, for a subsystem
// that runs a script of its own from inside an action (the tour): it has the
// kit.Env, not the engine. Steps run through env.Do as parts of that
// action, which must be action.Spec.Exclusive for its steps to pin the
// clock.
func NewEnvRunner(env *kit.Env, out io.Writer, opts Options) (*Runner, error) {
	if env.Do == nil {
		return nil, errs.New(errs.Internal, "a script runs only on an engine's services (kit.Env.Do is not set)")
	}
	return &Runner{x: envExecutor{env}, out: out, opts: opts, done: map[string]stepOutcome{}}, nil
}

// envExecutor runs steps through an engine's kit.Env.
type envExecutor struct{ env *kit.Env }

func (x envExecutor) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	return x.env.Do(ctx, req)
}
func (x envExecutor) Now() time.Time { return x.env.Clock.Now() }
func (x envExecutor) Agent() string  { return "" }

// Open opens a script for RunFile: "-" is standard input. Opening it before
// the engine lets an unreadable script fail (exit 2) before anything is touched.
func Open(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	// Only a regular file: a device (/dev/zero) or a FIFO could feed the
	// runner without end; a pipe goes through standard input ("-").
	f, err := input.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (to read a pipe, use --batch - and redirect it)", ErrUnreadable, err)
	}
	return f, nil
}

// IsYAML says whether a script path names a YAML script.
func IsYAML(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}

// Run reads a script from in — YAML when yaml is set, else JSON Lines — and
// runs it. Its error is non-nil only when the script could not be read
// (ErrUnreadable) or ctx ended the run.
func (r *Runner) Run(ctx context.Context, in io.Reader, yaml bool) (Summary, error) {
	var err error
	if yaml {
		err = r.runYAML(ctx, in)
	} else {
		err = r.runJSONL(ctx, in)
	}
	return r.summary, err
}

// line is one physical line of a JSONL script.
type line struct {
	n    int
	text []byte
	err  error
	// tooLong: the line was longer than input.MaxLine (text is empty).
	tooLong bool
}

// readLine reads one line (with its newline, if any) of at most max bytes.
// A longer line is read to its end and dropped, so that the script goes on
// at the next line and memory stays bounded.
func readLine(br *bufio.Reader, max int) (text []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(text)+len(chunk) > max {
				tooLong, text = true, nil
			} else {
				text = append(text, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return text, tooLong, err
		}
	}
}

func (r *Runner) runJSONL(ctx context.Context, in io.Reader) error {
	// Read in a goroutine so that an interrupt is noticed even while
	// waiting on standard input.
	lines := make(chan line)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(in, 64<<10)
		for n := 1; ; n++ {
			text, tooLong, err := readLine(br, input.MaxLine)
			if len(text) > 0 || tooLong || err == nil {
				select {
				case lines <- line{n: n, text: text, tooLong: tooLong}:
				case <-stop:
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					select {
					case lines <- line{n: n, err: err}:
					case <-stop:
					}
				}
				return
			}
		}
	}()
	for {
		var l line
		var ok bool
		select {
		case l, ok = <-lines:
		case <-ctx.Done():
			r.summary.Stopped = true
			return ctx.Err()
		}
		if !ok {
			return nil
		}
		if l.err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrUnreadable, l.n, l.err)
		}
		if l.tooLong {
			err := errs.New(errs.Parse, "the line is longer than the limit of %s; split the step (its args may be at most %s)",
				input.Size(input.MaxLine), input.Size(input.MaxArgs))
			if !r.runStep(ctx, l.n, Step{}, err) {
				return r.stopped(ctx)
			}
			continue
		}
		text := bytes.TrimSpace(l.text)
		if l.n == 1 {
			text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
		}
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		st, err := DecodeStep(text)
		if !r.runStep(ctx, l.n, st, err) {
			return r.stopped(ctx)
		}
	}
}

// runStep runs one decoded step (or reports why it could not be decoded) and
// writes its result. It returns false when the run should stop.
func (r *Runner) runStep(ctx context.Context, lineNo int, st Step, decodeErr error) bool {
	res := Result{ID: st.ID, Action: st.Action, Line: lineNo}
	start := r.x.Now()
	var err error
	switch {
	case decodeErr != nil:
		err = decodeErr
	case st.ID != "" && r.seen(st.ID):
		err = errs.New(errs.Validation, "id: %q is already the id of the step on line %d; step ids must be unique", st.ID, r.done[st.ID].line).
			With("field", "id")
	default:
		var args json.RawMessage
		args, err = resolveRefs(st.Args, r.done)
		if err == nil {
			req := conn.Request{Action: st.Action, Args: args, Principal: cmp.Or(st.As, r.opts.Principal), Turn: st.Turn,
				At: st.At, Session: r.session, IdempotencyKey: st.IdempotencyKey, Client: st.Client}
			if r.opts.Events {
				// Events are written as they come, so a long step (a plan
				// run) shows its progress; all of them before its result.
				req.OnEvent = func(ev events.Event) {
					r.mu.Lock()
					r.write(ev)
					r.mu.Unlock()
				}
			}
			res.Result, err = r.x.Do(ctx, req)
		}
	}
	if st.At == nil {
		// A pinned step took no time on the engine clock.
		res.ElapsedUS = r.x.Now().Sub(start).Microseconds()
	}
	res.OK = err == nil
	if err != nil {
		e := errs.As(err)
		if e.Kind == errs.StorageFull {
			r.summary.Full++
		}
		res.Error = &ErrorBody{Kind: e.Kind, Message: e.Message, Details: e.Details}
		if decodeErr != nil && e.Kind == errs.Parse {
			// The step itself could not be read: say where.
			res.Error.Message = fmt.Sprintf("line %d: %s", lineNo, e.Message)
		}
	}
	passed := res.OK
	if st.ExpectError != "" {
		passed = !res.OK && res.Error.Kind == st.ExpectError
		res.Expected = &passed
	}
	if st.ID != "" && !r.seen(st.ID) {
		r.done[st.ID] = stepOutcome{line: lineNo, ok: res.OK, result: res.Result}
	}
	r.summary.Steps++
	if passed {
		r.summary.Passed++
	} else {
		r.summary.Failed++
		if r.summary.FirstFailure == 0 {
			r.summary.FirstFailure = lineNo
		}
	}
	// The step's background work (summary folds, compactions) finished
	// with it (a session's steps run alone), at this step's time.
	r.mu.Lock()
	r.write(res)
	r.mu.Unlock()
	return (passed || !r.opts.FailFast) && ctx.Err() == nil
}

// stopped ends a run that runStep halted: by --fail-fast (no error), or by
// ctx (its error, even when the step itself had finished).
func (r *Runner) stopped(ctx context.Context) error {
	r.summary.Stopped = true
	return ctx.Err()
}

func (r *Runner) seen(id string) bool {
	_, ok := r.done[id]
	return ok
}

// write emits one line with a single Write, so a reader at the other end of
// a pipe sees whole lines as soon as each step is done.
func (r *Runner) write(v any) {
	b, err := action.MarshalJSON(v)
	if err != nil {
		b, _ = action.MarshalJSON(Result{Error: &ErrorBody{Kind: errs.Internal, Message: "encoding the result: " + err.Error()}})
	}
	// A failed write (say, the reader closed the pipe) has nowhere to be
	// reported; the exit status still says whether the steps passed.
	_, _ = r.out.Write(append(b, '\n'))
}
