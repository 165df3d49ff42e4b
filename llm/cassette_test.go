package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/engram-console/engram/llm"
)

func writeCassette(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cassette.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadCassetteStrictness(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown top-level field", "version: 1\nexchanges: []\n", "exchanges"},
		{"unknown request field", "version: 1\ninteractions:\n- request: {kind: chat, prompt: hi}\n  response: {text: x}\n", "prompt"},
		{"unknown response field", "version: 1\ninteractions:\n- request: {kind: chat}\n  response: {text: x, tokens: 3}\n", "tokens"},
		{"wrong version", "version: 2\ninteractions: []\n", "version 2"},
		{"no version", "interactions: []\n", "version 0"},
		{"bad kind", "version: 1\ninteractions:\n- request: {kind: completion}\n  response: {text: x}\n", `interaction 1: request kind "completion"`},
		{"response and error", "version: 1\ninteractions:\n- request: {kind: chat}\n  response: {text: x}\n  error: {message: boom}\n", "interaction 1 (chat) needs exactly one of response or error"},
		{"neither", "version: 1\ninteractions:\n- request: {kind: chat}\n  response: {text: x}\n- request: {kind: embed, texts: [a]}\n", "interaction 2 (embed) needs exactly one of vectors or error"},
		{"vectors and error", "version: 1\ninteractions:\n- request: {kind: embed, texts: [a]}\n  vectors: [[1]]\n  error: {message: boom}\n", "exactly one of vectors or error"},
		{"chat with vectors", "version: 1\ninteractions:\n- request: {kind: chat}\n  vectors: [[1]]\n", "interaction 1 (chat) has vectors, but chat exchanges have response or error"},
		{"embed with a response", "version: 1\ninteractions:\n- request: {kind: embed, texts: [a]}\n  response: {text: x}\n", "interaction 1 (embed) has response, but embed exchanges have vectors or error"},
		{"not YAML", "version: [1\n", "cassette"},
		{"wrong type", "version: one\ninteractions: []\n", "Version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeCassette(t, c.text)
			_, err := llm.LoadCassette(path)
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%q should name the file and %q", err, c.want)
			}
		})
	}
	if _, err := llm.LoadCassette(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// decomposeCassette is a hand-written cassette in testdata/llm.
const decomposeCassette = "../testdata/llm/decompose.yaml"

func TestReplayFromTestdata(t *testing.T) {
	p, err := llm.New(llm.Config{Provider: "replay", Cassette: decomposeCassette})
	if err != nil {
		t.Fatal(err)
	}
	if info := p.Info(); info != (llm.Info{Provider: "replay", Model: "llama3.2"}) {
		t.Errorf("info %+v", info)
	}
	req := decomposeRequest("Write the quarterly report")
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Subtasks []struct {
			ID           string   `json:"id"`
			Description  string   `json:"description"`
			Dependencies []string `json:"dependencies"`
		} `json:"subtasks"`
	}
	if err := json.Unmarshal([]byte(resp.Text), &plan); err != nil {
		t.Fatalf("%v: %q", err, resp.Text)
	}
	if len(plan.Subtasks) != 3 || plan.Subtasks[2].Dependencies[0] != "draft" {
		t.Errorf("plan %+v", plan)
	}
	if resp.Usage != (llm.Usage{PromptTokens: 61, CompletionTokens: 58}) || resp.Model != "llama3.2" {
		t.Errorf("response %+v", resp)
	}

	// The model is recorded but not matched: --model may differ.
	req.Model = "some-other-model"
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Errorf("the model should not be matched: %v", err)
	}

	// The recorded embedding.
	emb, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"quarterly report", "outline"}})
	if err != nil || !reflect.DeepEqual(emb.Vectors, [][]float32{{0.25, -0.5, 1}, {0.125, 0.75, -1}}) {
		t.Errorf("(%+v, %v)", emb, err)
	}

	// A recorded failure replays as the same failure.
	_, err = p.Complete(context.Background(), decomposeRequest("Crash the server"))
	e := llmError(t, err)
	if e.Status != 503 || !e.Transient || e.Msg != "server busy" || e.Provider != "replay" {
		t.Errorf("replayed failure %+v", e)
	}
}

func decomposeRequest(goal string) llm.Request {
	t := 0.0
	return llm.Request{
		System:      "You split a goal into subtasks. Answer with JSON: {\"subtasks\": [{\"id\", \"description\", \"dependencies\"}]}.",
		Messages:    []llm.Message{{Role: "user", Content: "Goal: " + goal + "\nStrategy: flat"}},
		JSON:        true,
		Temperature: &t,
	}
}

func cassetteOf(interactions ...llm.Interaction) *llm.Cassette {
	return &llm.Cassette{Version: 1, Model: "m", Interactions: interactions}
}

func chat(system, user, answer string) llm.Interaction {
	return llm.Interaction{
		Request:  llm.Recorded{Kind: "chat", System: system, Messages: []llm.Message{{Role: "user", Content: user}}},
		Response: &llm.Response{Text: answer},
	}
}

func TestReplayMatching(t *testing.T) {
	schemaReq := llm.Prompt("sys", "plan")
	schemaReq.Schema = json.RawMessage(`{"type": "object", "required": ["a"]}`)
	jsonReq := llm.Prompt("sys", "plan")
	jsonReq.JSON = true

	c := cassetteOf(
		chat("sys", "plan", "plain"),
		llm.Interaction{Request: llm.Recorded{Kind: "chat", System: "sys", Messages: []llm.Message{{Role: "user", Content: "plan"}}, JSON: true}, Response: &llm.Response{Text: `"json"`}},
		// The schema is matched by its meaning: key order and spacing do not matter.
		llm.Interaction{Request: llm.Recorded{Kind: "chat", System: "sys", Messages: []llm.Message{{Role: "user", Content: "plan"}}, Schema: `{"required":["a"],"type":"object"}`}, Response: &llm.Response{Text: `"schema"`}},
		chat("", "plan", "no system"),
		llm.Interaction{Request: llm.Recorded{Kind: "chat", System: "sys", Messages: []llm.Message{{Role: "user", Content: "plan"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: "more"}}}, Response: &llm.Response{Text: "longer chat"}},
		llm.Interaction{Request: llm.Recorded{Kind: "embed", Texts: []string{"a", "b"}}, Vectors: [][]float32{{1}, {2}}},
		llm.Interaction{Request: llm.Recorded{Kind: "embed", Texts: []string{"b", "a"}}, Vectors: [][]float32{{2}, {1}}},
	)
	p := llm.NewReplay(c, "")
	ctx := context.Background()
	for _, tc := range []struct {
		req  llm.Request
		want string
	}{
		{llm.Prompt("sys", "plan"), "plain"},
		{jsonReq, `"json"`},
		{schemaReq, `"schema"`},
		{llm.Prompt("", "plan"), "no system"},
		{llm.Request{System: "sys", Messages: []llm.Message{{Role: "user", Content: "plan"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: "more"}}}, "longer chat"},
	} {
		resp, err := p.Complete(ctx, tc.req)
		if err != nil || resp.Text != tc.want {
			t.Errorf("%+v: (%q, %v), want %q", tc.req, resp.Text, err, tc.want)
		}
		if resp.Model != "m" {
			t.Errorf("model %q, want the cassette's", resp.Model)
		}
	}
	for _, texts := range [][]string{{"a", "b"}, {"b", "a"}} {
		resp, err := p.Embed(ctx, llm.EmbedRequest{Texts: texts})
		if err != nil || len(resp.Vectors) != 2 || resp.Vectors[0][0] != map[string]float32{"a": 1, "b": 2}[texts[0]] {
			t.Errorf("%v: (%v, %v)", texts, resp.Vectors, err)
		}
	}
	if info := llm.NewReplay(c, "override").Info(); info.Model != "override" {
		t.Errorf("--model should win over the cassette's model: %+v", info)
	}
}

func TestReplayRepeatsInOrderThenTheLast(t *testing.T) {
	c := cassetteOf(
		chat("", "again?", "first"),
		chat("", "other", "unrelated"),
		chat("", "again?", "second"),
	)
	p := llm.NewReplay(c, "")
	var got []string
	for range 4 {
		resp, err := p.Complete(context.Background(), llm.Prompt("", "again?"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Text)
	}
	if want := []string{"first", "second", "second", "second"}; !reflect.DeepEqual(got, want) {
		t.Errorf("answers %v, want %v", got, want)
	}
}

func TestReplayConcurrentUse(t *testing.T) {
	var ins []llm.Interaction
	for i := range 20 {
		ins = append(ins, chat("", "same", string(rune('a'+i))))
	}
	p := llm.NewReplay(cassetteOf(ins...), "")
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, err := p.Complete(context.Background(), llm.Prompt("", "same"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[resp.Text] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != 20 {
		t.Errorf("%d distinct answers to 20 concurrent calls, want each recorded answer once", len(seen))
	}
}

func TestReplayRecordedFailure(t *testing.T) {
	c := cassetteOf(
		llm.Interaction{Request: llm.Recorded{Kind: "chat", Messages: []llm.Message{{Role: "user", Content: "x"}}}, Error: &llm.RecordedFailure{Message: "model \"m\" not found", Status: 404}},
		llm.Interaction{Request: llm.Recorded{Kind: "embed", Texts: []string{"x"}}, Error: &llm.RecordedFailure{Message: "the model did not answer in time", Transient: true}},
	)
	p := llm.NewReplay(c, "")
	_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
	if e := llmError(t, err); e.Status != 404 || e.Transient || e.Msg != `model "m" not found` || e.Op != "chat" {
		t.Errorf("%+v", e)
	}
	_, err = p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"x"}})
	if e := llmError(t, err); e.Status != 0 || !e.Transient || e.Op != "embed" {
		t.Errorf("%+v", e)
	}
}

func TestReplayMissNamesTheClosest(t *testing.T) {
	c := cassetteOf(
		chat("You plan.", "Goal: paint the fence", "a"),
		chat("You plan.", "Goal: write the quarterly report for the board", "b"),
		chat("You summarise.", "Summarise the meeting", "c"),
		llm.Interaction{Request: llm.Recorded{Kind: "embed", Texts: []string{"alpha"}}, Vectors: [][]float32{{1}}},
	)
	p := llm.NewReplay(c, "")
	ctx := context.Background()
	for _, tc := range []struct {
		req     llm.Request
		closest string
		differs []string
		same    []string
	}{
		{llm.Prompt("You plan.", "Goal: write the quarterly report for the shareholders"), `#2 (user: "Goal: write the quarterly report for the board")`,
			[]string{"the messages"}, []string{"the system prompt", "json"}},
		{llm.Prompt("You plan carefully.", "Goal: paint the fence"), "#1", []string{"the system prompt"}, []string{"the messages"}},
		{func() llm.Request {
			r := llm.Prompt("You summarise.", "Summarise the meeting")
			r.JSON = true
			return r
		}(), "#3",
			[]string{"json"}, []string{"the messages", "the system prompt"}},
		{func() llm.Request {
			r := llm.Prompt("You summarise.", "Summarise the meeting")
			r.Schema = json.RawMessage(`{"type":"string"}`)
			return r
		}(), "#3", []string{"the schema"}, []string{"the messages"}},
	} {
		_, err := p.Complete(ctx, tc.req)
		e := llmError(t, err)
		if e.Provider != "replay" || e.Transient {
			t.Errorf("%+v", e)
		}
		if !strings.Contains(e.Msg, "no recorded exchange matches") || !strings.Contains(e.Msg, "the closest is "+tc.closest) {
			t.Errorf("%q should name the closest, %s", e.Msg, tc.closest)
		}
		for _, d := range tc.differs {
			if !strings.Contains(e.Msg, d) {
				t.Errorf("%q should say it differs in %s", e.Msg, d)
			}
		}
		for _, s := range tc.same {
			if strings.Contains(e.Msg, "differs in "+s) || strings.Contains(e.Msg, ", "+s) {
				t.Errorf("%q says %s differs, which it does not", e.Msg, s)
			}
		}
	}
	_, err := p.Embed(ctx, llm.EmbedRequest{Texts: []string{"beta"}})
	if e := llmError(t, err); !strings.Contains(e.Msg, `the closest is #4 (texts: "alpha"), which differs in the texts`) {
		t.Errorf("%q", e.Msg)
	}
}

func TestReplayNoExchangesOfThatKind(t *testing.T) {
	p := llm.NewReplay(cassetteOf(chat("", "x", "y")), "")
	_, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"x"}})
	if e := llmError(t, err); !strings.Contains(e.Msg, "the cassette has no embed exchanges; record one with --record") {
		t.Errorf("%q", e.Msg)
	}
	p = llm.NewReplay(cassetteOf(), "")
	_, err = p.Complete(context.Background(), llm.Prompt("", "x"))
	if e := llmError(t, err); !strings.Contains(e.Msg, "no chat exchanges; record one with --record") {
		t.Errorf("%q", e.Msg)
	}
}

// The round trip: record exchanges against a live (fake) Ollama, close it,
// and replay them from the file with no server at all.
func TestRecordThenReplay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.yaml")
	srv := ollamaServer(t, func(body map[string]any) string {
		if body["format"] == "json" {
			return "```json\n{\"subtasks\": [\"outline\", \"draft\"]}\n```" // fenced, as models like to
		}
		if body["format"] != nil {
			return `{"answer": 42}`
		}
		return echo(body) + "\n  with a second line, \"quotes\", a trailing space \nand: colons # not a comment\n"
	})
	live := ollama(t, srv, llm.Config{Model: "llama3.2", Record: path})

	jsonReq := llm.Prompt("Answer in JSON.", "Plan the report.")
	jsonReq.JSON = true
	schemaReq := llm.Prompt("", "The answer?")
	schemaReq.Schema = json.RawMessage(`{"type": "object", "properties": {"answer": {"type": "integer"}}}`)
	longChat := llm.Request{System: "multi\nline\n  system", Messages: []llm.Message{
		{Role: "user", Content: "- looks like a list\n- item"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: "  leading spaces, unicode: 日本語 🎉"}}}
	temp := llm.Prompt("", "with sampling")
	temp.Temperature, temp.MaxTokens = ptr(0.2), 50
	requests := []llm.Request{llm.Prompt("", "Name a river."), llm.Prompt("You are terse.", "Name a mountain."), jsonReq, schemaReq, longChat, temp}
	missing := llm.Prompt("", "x")
	missing.Model = "missing"

	ctx := context.Background()
	var answers []llm.Response
	for _, req := range requests {
		resp, err := live.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, resp)
	}
	embed := llm.EmbedRequest{Texts: []string{"why is the sky blue", "0.1 + 0.2"}}
	vectors, err := live.Embed(ctx, embed)
	if err != nil {
		t.Fatal(err)
	}
	_, liveErr := live.Complete(ctx, missing)
	if liveErr == nil {
		t.Fatal("the missing model answered")
	}
	if answers[2].Text != `{"subtasks": ["outline", "draft"]}` {
		t.Errorf("the live JSON answer was not unwrapped: %q", answers[2].Text)
	}
	srv.Close() // from here on nothing answers at the server's address

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.HasPrefix(text, "# engram LLM cassette") {
		t.Errorf("no header comment:\n%s", text)
	}
	for _, want := range []string{"version: 1", "provider: ollama", "model: llama3.2", "kind: chat", "kind: embed", "system: You are terse.", "content: Name a river.", "json: true", `status: 404`} {
		if !strings.Contains(text, want) {
			t.Errorf("the cassette should contain %q:\n%s", want, text)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files left next to the cassette: %v", names)
	}

	replay, err := llm.New(llm.Config{Provider: "replay", Cassette: path})
	if err != nil {
		t.Fatal(err)
	}
	if info := replay.Info(); info.Model != "llama3.2" {
		t.Errorf("info %+v", info)
	}
	for i, req := range requests {
		resp, err := replay.Complete(ctx, req)
		if err != nil {
			t.Errorf("replaying %d: %v", i, err)
			continue
		}
		if resp != answers[i] {
			t.Errorf("replaying %d: %+v, recorded %+v", i, resp, answers[i])
		}
	}
	got, err := replay.Embed(ctx, embed)
	if err != nil || !reflect.DeepEqual(got.Vectors, vectors.Vectors) {
		t.Errorf("replayed vectors (%v, %v), recorded %v", got.Vectors, err, vectors.Vectors)
	}
	_, replayErr := replay.Complete(ctx, missing)
	le, re := llmError(t, liveErr), llmError(t, replayErr)
	if re.Status != le.Status || re.Transient != le.Transient || re.Msg != le.Msg {
		t.Errorf("replayed failure %+v, live %+v", re, le)
	}
}

func TestRecordedParseErrorReplaysAsParseError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	srv := ollamaServer(t, fixed("Sorry, I cannot do JSON."))
	req := llm.Prompt("", "json please")
	req.JSON = true
	_, liveErr := ollama(t, srv, llm.Config{Record: path}).Complete(context.Background(), req)
	srv.Close()
	_, replayErr := mustNew(t, llm.Config{Provider: "replay", Cassette: path}).Complete(context.Background(), req)
	var lp, rp *llm.ParseError
	if !errors.As(liveErr, &lp) || !errors.As(replayErr, &rp) || lp.Raw != rp.Raw {
		t.Errorf("live %v, replay %v: both should be the same *ParseError", liveErr, replayErr)
	}
}

func TestRecorderStartsAFreshCassette(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	srv := ollamaServer(t, echo)
	ollama(t, srv, llm.Config{Record: path})
	c, err := llm.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != 1 || c.Provider != "ollama" || len(c.Interactions) != 0 {
		t.Errorf("%+v", c)
	}
}

func TestRecorderSkipsCancelledCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	srv := ollamaServer(t, echo)
	p := ollama(t, srv, llm.Config{Record: path})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Complete(ctx, llm.Prompt("", "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
	c, err := llm.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interactions) != 0 {
		t.Errorf("a cancelled call was recorded: %+v", c.Interactions)
	}
}

func TestCassetteSaveIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("old contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := cassetteOf(chat("", "x", "y"))
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "c.yaml" {
		t.Errorf("directory holds %v, want only c.yaml (no temp files)", entries)
	}
	back, err := llm.LoadCassette(path)
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("(%+v, %v), saved %+v", back, err, c)
	}
	// A save that cannot happen leaves the old file whole.
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Error(err)
		}
	})
	if os.Getuid() != 0 { // root writes anywhere
		if err := cassetteOf().Save(path); err == nil {
			t.Error("saved into a read-only directory")
		}
		if back, err := llm.LoadCassette(path); err != nil || len(back.Interactions) != 1 {
			t.Errorf("the old cassette was damaged: (%+v, %v)", back, err)
		}
	}
}

// nastyTexts are texts a YAML writer gets wrong: leading indentation, tabs,
// carriage returns, lines of only spaces, texts of only line breaks,
// YAML-looking scalars, Unicode line separators.
var nastyTexts = []string{
	"plain", "", "two\nlines", "  indented first\nsecond", "\t\ttabs first\nline", "tab\there\nx",
	"a\n\n", "\n", "\n\n", "\n\nx", "multi\n\n\n", " \n ", "x\n  \n", "x\n\t\ny", "trailing space \nnext",
	"crlf\r\nline\r\n", "a\rb", "\r", "yes", "no", "null", "~", "1.0", "0x1F", "2025-11-05", "# hash", "key: value",
	"- item", "- item\n- list", "|\nblock", ">\nfolded", "'single'\n\"double\"", "ends with space ", " starts with space",
	"🎉\nemoji 日本語", "nul\x00byte\nx", "esc\x1b[0m\nx", "\u2028line separator\nx", "one\u2028line", "\u0085nel", "nel\u0085\nx",
	"\ufeffbom\nx", "del\x7f\nx", "  ", "\t", "{\"json\": [1, 2]}", "```json\n{\"a\": 1}\n```", "---\n...", "%YAML 1.2\nx",
	"& anchor\n* alias", "!tag\nx", "@at\n`tick`", "line\n  indented\n    more\nback",
	"000\t0", "a\tb", "true\tx", "12:30\tx", "\n 0", "\n\n\tx\ny", "0\n0 ", "a\nb\t",
}

func TestCassetteRoundTripsEveryText(t *testing.T) {
	for _, s := range nastyTexts {
		checkCassetteRoundTrip(t, s)
	}
}

func FuzzCassetteRoundTrip(f *testing.F) {
	for _, s := range nastyTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("YAML holds only valid UTF-8 (and so does JSON from a model server)")
		}
		checkCassetteRoundTrip(t, s)
	})
}

func checkCassetteRoundTrip(t *testing.T, s string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	c := &llm.Cassette{Version: 1, Provider: "ollama", Model: "m", Interactions: []llm.Interaction{
		{
			Request:  llm.Recorded{Kind: "chat", System: s, Messages: []llm.Message{{Role: "user", Content: s}, {Role: "assistant", Content: "ok"}}, Model: "m"},
			Response: &llm.Response{Text: s, Model: "m", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 2}},
		},
		{Request: llm.Recorded{Kind: "embed", Texts: []string{s, "x"}}, Vectors: [][]float32{{0.1, -2.5e-7, 3}, {1}}},
		{Request: llm.Recorded{Kind: "chat", Messages: []llm.Message{{Role: "user", Content: "x"}}}, Error: &llm.RecordedFailure{Message: s, Status: 500, Transient: true}},
	}}
	if err := c.Save(path); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	back, err := llm.LoadCassette(path)
	if err != nil {
		data, _ := os.ReadFile(path)
		t.Fatalf("%q: the saved cassette does not load: %v\n%s", s, err, data)
	}
	if !reflect.DeepEqual(back, c) {
		data, _ := os.ReadFile(path)
		t.Fatalf("%q: the cassette came back different:\n%+v\n%s", s, back.Interactions, data)
	}
}

func TestCassetteSaveFailureLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	// The path is a directory that is not empty: the temp file is written,
	// and the rename onto the path fails.
	path := filepath.Join(dir, "c.yaml")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := cassetteOf(chat("", "x", "y")).Save(path); err == nil {
		t.Fatal("saved over a directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "c.yaml" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("after a failed save the directory holds %v, want only c.yaml", names)
	}
}

// TestReplayAnswersTextsBatchedOtherwise: engram batches the texts it
// embeds as they come, so a replay may ask for texts recorded in other
// calls: each is answered from its recorded vector; a text never recorded
// still fails.
func TestReplayAnswersTextsBatchedOtherwise(t *testing.T) {
	c := &llm.Cassette{Version: 1, Model: "m", Interactions: []llm.Interaction{
		{Request: llm.Recorded{Kind: "embed", Texts: []string{"a"}}, Vectors: [][]float32{{1, 0}}},
		{Request: llm.Recorded{Kind: "embed", Texts: []string{"b", "c"}}, Vectors: [][]float32{{0, 1}, {1, 1}}},
	}}
	p := llm.NewReplay(c, "")
	resp, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"c", "a"}})
	if err != nil || len(resp.Vectors) != 2 || resp.Vectors[0][0] != 1 || resp.Vectors[0][1] != 1 || resp.Vectors[1][1] != 0 {
		t.Fatalf("regrouped: %v %v", resp.Vectors, err)
	}
	if _, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a", "never"}}); err == nil {
		t.Error("a text never recorded was answered")
	}
}

// TestReplayOfARecordedEmbedFailureFailsAgain: answering texts one by one
// is for requests grouped otherwise than recorded, never for a recorded
// failure, which a replay must repeat (the retries after it are part of
// what was recorded).
func TestReplayOfARecordedEmbedFailureFailsAgain(t *testing.T) {
	c := &llm.Cassette{Version: 1, Model: "m", Interactions: []llm.Interaction{
		{Request: llm.Recorded{Kind: "embed", Texts: []string{"a"}}, Error: &llm.RecordedFailure{Status: 400, Message: "bad input"}},
		{Request: llm.Recorded{Kind: "embed", Texts: []string{"a"}}, Vectors: [][]float32{{1, 0}}},
	}}
	p := llm.NewReplay(c, "")
	if _, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a"}}); err == nil || !strings.Contains(err.Error(), "bad input") {
		t.Fatalf("the recorded failure replayed as %v", err)
	}
	if resp, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a"}}); err != nil || len(resp.Vectors) != 1 {
		t.Errorf("the retry after it: %v %v", resp.Vectors, err)
	}
}
