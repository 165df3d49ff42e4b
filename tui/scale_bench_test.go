package tui

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/kit"
)

// Flags of the scale benchmarks. The full shape of issue 17 (100,000
// goals, 10,000 threads, 1,000,000 utterances) is -scale 1; the default
// builds a hundredth of it in b.TempDir() so that the benchmark runs in
// seconds. -scale-dir keeps the store (or reuses one built before, by this
// benchmark or by `engram scale`): a directory with a store in it is opened
// as it is.
var (
	scaleFactor = flag.Float64("scale", 0.01, "fraction of issue 17's console shape (100k goals, 10k threads, 1M utterances) the scale benchmarks build")
	scaleGoals  = flag.Int("scale-goals", -1, "how many goals the scale benchmarks build, when not -scale's share (1000000 with -scale 0: issue 17's 1M-item store)")
	scaleAgent  = flag.String("scale-agent", "", "the agent the console acts as over the scale store (agent_a for a store `engram scale` built: its items are agent_a's); default engram's")
	scaleHeap   = flag.String("scale-heap", "", "file BenchmarkResidentMemory writes a heap profile to while the store is open, after the queries")
	scaleSearch = flag.String("scale-search", "", "AGENT/CONVERSATION that BenchmarkResidentMemory also searches at the end, as that agent (local/scale for the 1M utterances of a store `engram scale` built), reporting rss-searched-MB")
	scaleDir    = flag.String("scale-dir", "", "directory of the scale benchmarks' durable store: reused when it holds one, built there otherwise (default: a temporary one)")
)

// scaleShape is how much a scale store holds.
type scaleShape struct{ goals, threads, utterances int }

func (s scaleShape) String() string {
	return fmt.Sprintf("%d goals, %d threads, %d utterances", s.goals, s.threads, s.utterances)
}

func currentScale() scaleShape {
	f := *scaleFactor
	s := scaleShape{goals: int(100_000 * f), threads: int(10_000 * f), utterances: int(1_000_000 * f)}
	if *scaleGoals >= 0 {
		s.goals = *scaleGoals
	}
	return s
}

// scaleStore returns the directory of a durable store of the current
// shape, building it when it is not there yet.
func scaleStore(b *testing.B) string {
	b.Helper()
	dir := *scaleDir
	if dir == "" {
		dir = b.TempDir()
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	engine, err := core.Open(core.Options{DataDir: dir, Clock: clock.NewFixed(goldenTime)})
	if err != nil {
		b.Fatal(err)
	}
	shape := currentScale()
	began := time.Now()
	buildScale(b, engine, shape)
	if err := engine.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %v in %s (%s)", shape, time.Since(began).Round(time.Millisecond), dir)
	return dir
}

// buildScale fills engine with shape's goals, threads and utterances
// through the ordinary actions, several at a time.
func buildScale(b *testing.B, engine *core.Engine, shape scaleShape) {
	ctx := context.Background()
	statuses := []string{"active", "active", "active", "blocked", "completed"}
	priorities := []string{"low", "medium", "high", "critical"}
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango")
	parallel(b, shape.goals, func(i int) error {
		args := fmt.Sprintf(`{"type":"goal","fields":{"title":"goal %d %s %s","status":%q,"priority":%q,"tags":[%q]}}`,
			i, words[i%len(words)], words[(i/7)%len(words)], statuses[i%len(statuses)], priorities[i%len(priorities)], words[i%5])
		_, err := engine.Do(ctx, core.Request{Action: "cortex.create", Args: json.RawMessage(args)})
		return err
	})
	parallel(b, shape.threads, func(i int) error {
		args := fmt.Sprintf(`{"channel":"web","text":"thread %d about %s and %s"}`, i, words[i%len(words)], words[(i/3)%len(words)])
		_, err := engine.Do(ctx, core.Request{Action: "thread.message", Args: json.RawMessage(args)})
		return err
	})
	// The utterances go to the conversation the Chat tab opens, and to a
	// few others, so that Chat reads a long buffer and search has text.
	const conversations = 4
	parallel(b, conversations, func(c int) error {
		conv := "default"
		if c > 0 {
			conv = fmt.Sprintf("conv-%d", c)
		}
		for i := c; i < shape.utterances; i += conversations {
			speaker := "user"
			if i%2 == 1 {
				speaker = "assistant"
			}
			args := fmt.Sprintf(`{"conversation":%q,"speaker":%q,"text":"utterance %d: %s %s %s"}`,
				conv, speaker, i, words[i%len(words)], words[(i/3)%len(words)], words[(i/11)%len(words)])
			if _, err := engine.Do(ctx, core.Request{Action: "history.write", Args: json.RawMessage(args)}); err != nil {
				return err
			}
		}
		return nil
	})
}

// parallel runs do(0..n-1) on a few goroutines and fails b on an error.
func parallel(b *testing.B, n int, do func(i int) error) {
	const workers = 4
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := do(i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// frameDriver is a small Bubble Tea runtime for the benchmark: it runs the
// model's commands on goroutines, as tea.Program does, and times each
// message's Update and the View after it, as one frame.
type frameDriver struct {
	m     *Model
	msgs  chan tea.Msg
	times map[string][]time.Duration
}

func newFrameDriver(m *Model) *frameDriver {
	return &frameDriver{m: m, msgs: make(chan tea.Msg, 1024), times: map[string][]time.Duration{}}
}

// run starts cmd the way tea.Program does: batches fan out, sequences run
// in order; every message that comes back is queued for a frame.
func (d *frameDriver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		d.deliver(msg)
	}()
}

func (d *frameDriver) deliver(msg tea.Msg) {
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			d.run(c)
		}
	case tea.QuitMsg:
	default:
		if reflect.TypeOf(msg).Name() == "sequenceMsg" {
			// tea.Sequence: run one after another.
			cmds := reflect.ValueOf(msg)
			go func() {
				for i := range cmds.Len() {
					c, _ := cmds.Index(i).Interface().(tea.Cmd)
					if c != nil {
						d.deliver(c())
					}
				}
			}()
			return
		}
		d.msgs <- msg
	}
}

// frame times one message: Update, then View.
func (d *frameDriver) frame(kind string, msg tea.Msg) {
	var cmd tea.Cmd
	began := time.Now()
	// The label lets a CPU profile show frames alone: -tagfocus frame=.
	pprof.Do(context.Background(), pprof.Labels("frame", kind), func(context.Context) {
		_, cmd = d.m.Update(msg)
		_ = d.m.View()
	})
	d.times[kind] = append(d.times[kind], time.Since(began))
	d.run(cmd)
}

// settle handles the messages the commands send back until none has come
// for quiet (a command waiting for the next event or a tick never ends).
func (d *frameDriver) settle(quiet time.Duration) {
	for {
		select {
		case msg := <-d.msgs:
			d.frame(msgKind(msg), msg)
		case <-time.After(quiet):
			return
		}
	}
}

// msgKind names a message for the figures: a key, a resize, an engine
// event, or an answer to a pane's request (by its action).
func msgKind(msg tea.Msg) string {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		return "key"
	case tea.WindowSizeMsg:
		return "resize"
	case eventMsg:
		return "event"
	case addressed:
		// Name the action: resultMsg keeps it in a field.
		if f := reflect.ValueOf(msg).FieldByName("action"); f.IsValid() && f.Kind() == reflect.String {
			return "result:" + f.String()
		}
		return "result"
	default:
		_ = msg
		return "other"
	}
}

func benchKey(k string) tea.KeyMsg {
	switch k {
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// BenchmarkFrameAtScale times console frames (Update + View of one
// message) over a durable store of issue 17's console shape: 100,000
// goals, 10,000 threads and 1,000,000 utterances at -scale 1 (a hundredth
// of it by default; -scale-dir reuses a store). Each iteration visits every
// tab (Chat, Threads, Goals, Plans, Memory, Trace, Agents), moves through
// its list with ↓ and pgdown, resizes the window, and has goals change
// under it (cortex.update from outside the console: item.mutated events),
// and times every message that brings: keys, tab switches, resizes, events
// and the answers to the panes' requests. It reports p50 and p99 per kind
// and overall (target: overall p99 ≤ 16 ms at -scale 1).
func BenchmarkFrameAtScale(b *testing.B) {
	dir := scaleStore(b)
	engine, err := core.Open(core.Options{DataDir: dir, Agent: *scaleAgent})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := engine.Close(); err != nil {
			b.Error(err)
		}
	}()
	ctx := context.Background()
	// Goals to change under the console: the first page of the active ones.
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	res, err := engine.Do(ctx, core.Request{Action: "cortex.query", Args: json.RawMessage(`{"type":"goal","limit":50}`)})
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(res, &page); err != nil || len(page.Items) == 0 {
		b.Fatalf("no goals to change: %v %s", err, res)
	}
	m := New(conn.Conn(engine), Options{StatusFade: time.Hour})
	d := newFrameDriver(m)
	d.frame("resize", tea.WindowSizeMsg{Width: 120, Height: 36})
	d.run(m.Init())
	d.settle(200 * time.Millisecond)
	d.times = map[string][]time.Duration{}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for t := range tabCount {
			d.frame("tab", benchKey(fmt.Sprint(int(t)+1)))
			d.settle(20 * time.Millisecond)
			for k := range 12 {
				key := "down"
				if k%5 == 4 {
					key = "pgdown"
				}
				d.frame("key", benchKey(key))
				d.settle(5 * time.Millisecond)
			}
			// A goal changes under the console: the event reaches every pane.
			id := page.Items[rng.IntN(len(page.Items))].ID
			args := fmt.Sprintf(`{"id":%q,"updates":{"title":"changed %d"}}`, id, rng.IntN(1_000_000))
			if _, err := engine.Do(ctx, core.Request{Action: "cortex.update", Args: json.RawMessage(args)}); err != nil {
				b.Fatal(err)
			}
			d.settle(20 * time.Millisecond)
		}
		w, h := 80+rng.IntN(60), 24+rng.IntN(20)
		d.frame("resize", tea.WindowSizeMsg{Width: w, Height: h})
		d.settle(5 * time.Millisecond)
	}
	b.StopTimer()
	d.settle(300 * time.Millisecond)
	var all []time.Duration
	kinds := make([]string, 0, len(d.times))
	for k, ts := range d.times {
		kinds = append(kinds, k)
		all = append(all, ts...)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ts := d.times[k]
		b.ReportMetric(float64(percentile(ts, 0.5).Microseconds())/1000, "p50-"+k+"-ms")
		b.ReportMetric(float64(percentile(ts, 0.99).Microseconds())/1000, "p99-"+k+"-ms")
	}
	b.ReportMetric(float64(percentile(all, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(all, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(all))/float64(b.N), "frames/op")
}

// BenchmarkOpenToFirstFrame times what a person waits for when engram
// starts on a closed durable store (issue 17's 1M-item store at -scale 1
// with -scale-dir; a hundredth by default): opening the engine, building
// the console, and its first frame after the terminal's size arrives
// (target: ≤ 1 s in all). It reports each phase, and engine.info (its
// counts) on its own.
func BenchmarkOpenToFirstFrame(b *testing.B) {
	dir := scaleStore(b)
	var open, build, first, total, info time.Duration
	for i := 0; i < b.N; i++ {
		began := time.Now()
		engine, err := core.Open(core.Options{DataDir: dir, Agent: *scaleAgent})
		if err != nil {
			b.Fatal(err)
		}
		opened := time.Now()
		m := New(conn.Conn(engine), Options{StatusFade: time.Hour, OfferTour: true})
		built := time.Now()
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
		_ = m.Init() // the program starts the panes' loads; the frame does not wait for them
		_ = m.View()
		done := time.Now()
		open += opened.Sub(began)
		build += built.Sub(opened)
		first += done.Sub(built)
		total += done.Sub(began)
		b.StopTimer()
		t0 := time.Now()
		if _, err := engine.Info(context.Background()); err != nil {
			b.Fatal(err)
		}
		info += time.Since(t0)
		m.cancel()
		if err := engine.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(open.Seconds()*1000/n, "open-ms")
	b.ReportMetric(build.Seconds()*1000/n, "console-ms")
	b.ReportMetric(first.Seconds()*1000/n, "first-view-ms")
	b.ReportMetric(total.Seconds()*1000/n, "to-first-frame-ms")
	b.ReportMetric(info.Seconds()*1000/n, "engine.info-ms")
}

// procStatusMB reads a field of /proc/self/status (VmRSS, VmHWM) in MB; 0
// where there is no /proc.
func procStatusMB(field string) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kb float64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// BenchmarkResidentMemory measures what an engram holding a scale store
// keeps resident (issue 17: ≤ 600 MB at 1M items; -scale-goals 1000000
// -scale 0 -scale-dir DIR for that store, or a store `engram scale`
// built): VmRSS right after opening it; after the console has started
// (its panes' loads) and shown every tab, as a person looking around
// does, and an agent's queries (cortex.query, cortex.active,
// history.search, thread.list, engine.info without counts) ran ("first");
// and once the cortex index has loaded, after the same queries again and
// a garbage collection, as a running engram holds it ("held", with the
// peak, VmHWM, the Go heap in use, and RssAnon and RssFile apart). Last it asks engine.info for its counts, which read
// every key and so page much of the store's tables into memory, and
// reports that apart ("counted"); with -scale-search, before that, a
// search of a large conversation ("searched"). -memprofile then shows what dominates
// the heap. The figures are the whole process's (the test binary's few MB
// too); run it with -benchtime 1x, as a later iteration starts from the
// last one's, and over a store built before (-scale-dir), as building it
// in the same process leaves its heap behind.
func BenchmarkResidentMemory(b *testing.B) {
	entries, _ := os.ReadDir(*scaleDir)
	built := *scaleDir == "" || len(entries) == 0
	dir := scaleStore(b)
	if built {
		// Building the store left this process its heap and its peak:
		// the heap goes back and the peak starts afresh, yet what the
		// runtime keeps of a larger heap still shows (tens of MB at
		// -scale 0.01). An opening engram's figures are a second run's,
		// with -scale-dir.
		b.Log("the store was built in this process, which the figures partly show: measure over one built before " +
			"(with -scale-dir DIR, the first run builds it and the next measures)")
		debug.FreeOSMemory()
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			b.Logf("hwm-MB includes building the store: %v", err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		opts := core.Options{DataDir: dir, Agent: *scaleAgent}
		var cx *cortex.Cortex
		subsystems := core.DefaultSubsystems(opts)
		subsystems[0] = func(env *kit.Env) error { cx = cortex.Register(env); return nil }
		opts.Subsystems = subsystems
		engine, err := core.Open(opts)
		if err != nil {
			b.Fatal(err)
		}
		opened := procStatusMB("VmRSS")
		m := New(conn.Conn(engine), Options{StatusFade: time.Hour})
		d := newFrameDriver(m)
		d.frame("resize", tea.WindowSizeMsg{Width: 120, Height: 36})
		d.run(m.Init())
		d.settle(300 * time.Millisecond)
		for t := range tabCount {
			d.frame("tab", benchKey(fmt.Sprint(int(t)+1)))
			d.settle(300 * time.Millisecond)
		}
		ctx := context.Background()
		ask := func() {
			for _, q := range []struct{ action, args string }{
				{"cortex.query", `{"type":"goal","status":["active","blocked"],"priority":["high","critical"],"tags":["alpha"],"limit":50}`},
				{"cortex.active", `{}`},
				{"history.search", `{"query":"bravo charlie"}`},
				{"thread.list", ``},
				{"engine.info", `{"counts":false}`},
			} {
				var args json.RawMessage
				if q.args != "" {
					args = json.RawMessage(q.args)
				}
				if _, err := engine.Do(ctx, core.Request{Action: q.action, Args: args}); err != nil {
					b.Fatalf("%s: %v", q.action, err)
				}
			}
		}
		ask()
		first := procStatusMB("VmRSS")
		<-cx.Indexed()
		ask()
		d.settle(100 * time.Millisecond)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		held := procStatusMB("VmRSS")
		if *scaleHeap != "" {
			f, err := os.Create(*scaleHeap)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(opened, "rss-open-MB")
		b.ReportMetric(first, "rss-first-MB")
		b.ReportMetric(held, "rss-held-MB")
		// VmRSS counts the store's memory-mapped tables and logs as far as
		// they were read (RssFile: page cache the kernel can take back)
		// beside the process's own memory (RssAnon).
		b.ReportMetric(procStatusMB("RssAnon"), "rss-anon-MB")
		b.ReportMetric(procStatusMB("RssFile"), "rss-file-MB")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MB")
		if agent, conv, ok := strings.Cut(*scaleSearch, "/"); ok {
			// A search of a large conversation keeps its postings in
			// memory (history's postings.go).
			args := fmt.Sprintf(`{"conversation":%q,"query":"bravo charlie"}`, conv)
			if _, err := engine.Do(ctx, core.Request{Action: "history.search", Principal: agent, Args: json.RawMessage(args)}); err != nil {
				b.Fatalf("-scale-search %s: %v", *scaleSearch, err)
			}
			runtime.GC()
			b.ReportMetric(procStatusMB("VmRSS"), "rss-searched-MB")
		}
		b.ReportMetric(procStatusMB("VmHWM"), "hwm-MB")
		if _, err := engine.Do(ctx, core.Request{Action: "engine.info"}); err != nil {
			b.Fatalf("engine.info: %v", err)
		}
		b.ReportMetric(procStatusMB("VmRSS"), "rss-counted-MB")
		m.cancel()
		if err := engine.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
