// Package scale builds large durable stores for the benchmarks (issue 17:
// a million cortex items, conversation threads, utterances, memories), so
// that anyone can rebuild them with `engram scale`: nothing large is
// committed. It writes through each subsystem's bulk path, which writes
// what its actions write, only many to a transaction: cortex items with
// (*cortex.Cortex).BulkCreate, utterances with (*history.History).BulkLoad,
// memories with (*memory.Memory).MemorizeMany; threads (few) go through
// thread.message itself. The data is generated from a seed and the
// engine's clock is fixed, so a build repeats.
package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/core/tokens"
)

// Start is the generated data's reference time (the cortex tests' t=0):
// item i is created at Start + (i+1) ms, due dates fall in the 60 days
// after it, memories in the year before it.
var Start = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// Names the generated data lives under.
const (
	// Conversation holds the utterances.
	Conversation = "scale"
	// MemoryStore is the episodic memory store holding the memories.
	MemoryStore = "scale"
)

// Options say how much to build. Zero counts build nothing of that kind.
type Options struct {
	// Dir is the data directory: new or empty, or a store built before
	// (ids never collide: an existing item id is an error).
	Dir string
	// Items is how many cortex items (goals, actions, questions).
	Items int
	// Threads is how many conversation threads (one message each).
	Threads int
	// Utterances is how many utterances, in the conversation "scale".
	Utterances int
	// Memories is how many memories, in the episodic store "scale".
	Memories int
	// Seed chooses the data; the same seed builds the same data.
	Seed uint64
	// Progress receives a line now and then, and one at the end of each
	// kind (nil: none).
	Progress io.Writer
}

// Report says what a build wrote.
type Report struct {
	Items, Threads, Utterances, Memories int
	// Took is how long the build took.
	Took time.Duration
}

// itemChunk is how many items one BulkCreate call takes: it holds its
// items' sealed entries in memory (tests make it small).
var itemChunk = 20_000

// maxCount bounds each count: a bigger store than a benchmark needs is a
// typo, and would fill the disk.
const maxCount = 10_000_000

// Build generates the data opts asks for into opts.Dir.
func Build(ctx context.Context, opts Options) (Report, error) {
	for _, c := range []struct {
		name string
		n    int
	}{{"items", opts.Items}, {"threads", opts.Threads}, {"utterances", opts.Utterances}, {"memories", opts.Memories}} {
		if c.n < 0 || c.n > maxCount {
			return Report{}, fmt.Errorf("%s: %d is out of range: give 0 to %d", c.name, c.n, maxCount)
		}
	}
	if opts.Dir == "" {
		return Report{}, errors.New("no data directory: give one (--data DIR)")
	}
	began := time.Now()
	clk := clock.NewFixed(Start)
	var (
		cx  *cortex.Cortex
		his *history.History
		mem *memory.Memory
	)
	engine, err := core.Open(core.Options{
		DataDir: opts.Dir, Clock: clk, IDSeed: fmt.Sprintf("scale %d", opts.Seed),
		Subsystems: []core.Subsystem{
			func(env *kit.Env) error { cx = cortex.Register(env); return nil },
			func(env *kit.Env) error {
				var err error
				his, err = history.Register(env, history.Options{})
				return err
			},
			func(env *kit.Env) error { var err error; mem, err = memory.Register(env); return err },
			// No search of older threads for linking candidates: the
			// generated sentences share their templates' words, so a
			// search bridges every cross-thread episode into one, whose
			// every new thread then reads all its threads' access
			// (3,000 threads: 20 s to build with it off, 103 s on).
			func(env *kit.Env) error {
				_, err := episodic.Register(env, episodic.Options{MaxSearched: -1})
				return err
			},
			tokens.Subsystem(tokens.Options{}),
		},
	})
	if err != nil {
		return Report{}, err
	}
	b := &builder{engine: engine, clk: clk, opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 17))}
	rep, err := b.run(ctx, cx, his, mem)
	if cerr := engine.Close(); err == nil {
		err = cerr
	}
	rep.Took = time.Since(began)
	return rep, err
}

// builder holds a build's engine and its progress.
type builder struct {
	engine *core.Engine
	clk    *clock.Fixed
	opts   Options
	rng    *rand.Rand
	began  time.Time
	last   time.Time
}

func (b *builder) run(ctx context.Context, cx *cortex.Cortex, his *history.History, mem *memory.Memory) (Report, error) {
	var rep Report
	if n := b.opts.Items; n > 0 {
		b.start()
		src := NewItems(b.opts.Seed)
		for rep.Items < n {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			items := src.Next(min(itemChunk, n-rep.Items))
			before := rep.Items
			end, err := cx.BulkCreate(ctx, items, cortex.BulkOptions{Start: b.clk.Now(), SetClock: b.clk.Set, PerTx: 250,
				Progress: func(done int) { b.progress("items", before+done, n) }})
			if err != nil {
				return rep, err
			}
			b.clk.Set(end)
			rep.Items += len(items)
		}
		b.done("items", n)
	}
	if n := b.opts.Threads; n > 0 {
		b.start()
		for i := range n {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			b.clk.Advance(time.Second)
			args, _ := json.Marshal(episodic.MessageRequest{Channel: "web", Text: sentence(b.rng), Title: fmt.Sprintf("thread %06d", i)})
			if _, err := b.engine.Do(ctx, core.Request{Action: "thread.message", Args: args}); err != nil {
				return rep, fmt.Errorf("thread %d: %w", i, err)
			}
			rep.Threads++
			b.progress("threads", i+1, n)
		}
		b.done("threads", n)
	}
	if n := b.opts.Utterances; n > 0 {
		b.start()
		call := action.Call{Principal: b.engine.Agent(), Clock: b.engine.Clock()}
		reqs := func(yield func(history.WriteRequest) bool) {
			for i := range n {
				speaker := "user"
				if i%2 == 1 {
					speaker = "assistant"
				}
				if !yield(history.WriteRequest{Conversation: Conversation, Speaker: speaker, Text: sentence(b.rng)}) {
					return
				}
				if (i+1)%10_000 == 0 {
					b.progress("utterances", i+1, n)
				}
			}
		}
		written, err := his.BulkLoad(ctx, call, iter.Seq[history.WriteRequest](reqs))
		rep.Utterances = written
		if err != nil {
			return rep, err
		}
		b.done("utterances", n)
	}
	if n := b.opts.Memories; n > 0 {
		b.start()
		args, _ := json.Marshal(memory.ConfigureArgs{Store: MemoryStore, Type: memory.TypeEpisodic})
		if _, err := b.engine.Do(ctx, core.Request{Action: "memory.configure", Args: args}); err != nil {
			return rep, err
		}
		call := action.Call{Principal: b.engine.Agent(), Clock: b.engine.Clock()}
		gen := NewMemories(b.opts.Seed)
		const chunk = 1000
		batch := make([]memory.Item, 0, chunk)
		for i := range n {
			batch = append(batch, gen.Item(i))
			if len(batch) == chunk || i == n-1 {
				if err := mem.MemorizeMany(ctx, call, MemoryStore, batch); err != nil {
					return rep, fmt.Errorf("memories %d..%d: %w", i+1-len(batch), i, err)
				}
				rep.Memories += len(batch)
				batch = batch[:0]
				b.progress("memories", i+1, n)
			}
		}
		b.done("memories", n)
	}
	return rep, nil
}

// start begins a kind's progress.
func (b *builder) start() { b.began, b.last = time.Now(), time.Now() }

// progress prints a line at most every two seconds.
func (b *builder) progress(what string, done, total int) {
	if b.opts.Progress == nil || time.Since(b.last) < 2*time.Second {
		return
	}
	b.last = time.Now()
	_, _ = fmt.Fprintf(b.opts.Progress, "engram scale: %s %d/%d (%d%%) %s\n", what, done, total, done*100/total,
		time.Since(b.began).Round(100*time.Millisecond)) // a lost progress line loses nothing
}

// done prints a kind's last line.
func (b *builder) done(what string, n int) {
	if b.opts.Progress != nil {
		_, _ = fmt.Fprintf(b.opts.Progress, "engram scale: %d %s in %s\n", n, what, time.Since(b.began).Round(100*time.Millisecond))
	}
}
