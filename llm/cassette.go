package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/engram-console/engram/core/input"
	"github.com/goccy/go-yaml"
)

// Cassette is a file of recorded model exchanges (docs/llm.md describes the
// format). --record writes one from a live provider; --llm replay answers
// from one, so tests and demos run the model paths without a model.
type Cassette struct {
	Version      int           `yaml:"version"`
	Provider     string        `yaml:"provider,omitempty"`
	Model        string        `yaml:"model,omitempty"`
	Interactions []Interaction `yaml:"interactions"`
}

// Interaction is one request and what came back.
type Interaction struct {
	Request  Recorded         `yaml:"request"`
	Response *Response        `yaml:"response,omitempty"`
	Vectors  [][]float32      `yaml:"vectors,omitempty"`
	Error    *RecordedFailure `yaml:"error,omitempty"`
}

// Recorded is a request as the cassette keeps it: a chat or an embedding.
// The model is recorded for reference but not matched, so a cassette replays
// whatever --model says.
type Recorded struct {
	Kind     string    `yaml:"kind"` // "chat" or "embed"
	System   string    `yaml:"system,omitempty"`
	Messages []Message `yaml:"messages,omitempty"`
	JSON     bool      `yaml:"json,omitempty"`
	Schema   string    `yaml:"schema,omitempty"` // compact JSON
	Texts    []string  `yaml:"texts,omitempty"`
	Model    string    `yaml:"model,omitempty"`
}

// RecordedFailure is a call that failed, replayed as the same failure.
type RecordedFailure struct {
	Message   string `yaml:"message"`
	Status    int    `yaml:"status,omitempty"`
	Transient bool   `yaml:"transient,omitempty"`
}

const cassetteVersion = 1

func recordChat(req Request) Recorded {
	r := Recorded{Kind: "chat", System: req.System, Messages: req.Messages, JSON: req.JSON, Model: req.Model}
	if len(req.Schema) > 0 {
		r.Schema = compactJSON(req.Schema)
	}
	return r
}

func recordEmbed(req EmbedRequest) Recorded {
	return Recorded{Kind: "embed", Texts: req.Texts, Model: req.Model}
}

func compactJSON(raw json.RawMessage) string {
	var b strings.Builder
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v) // map keys sorted: one spelling per schema
	b.Write(out)
	return b.String()
}

// matches compares everything but the model.
func (r Recorded) matches(o Recorded) bool {
	r.Model, o.Model = "", ""
	return reflect.DeepEqual(normalize(r), normalize(o))
}

func normalize(r Recorded) Recorded {
	if len(r.Messages) == 0 {
		r.Messages = nil
	}
	if len(r.Texts) == 0 {
		r.Texts = nil
	}
	return r
}

// LoadCassette reads a cassette file.
func LoadCassette(path string) (*Cassette, error) {
	// input reads only a regular file up to its cap and refuses YAML
	// aliases before decoding; its errors never quote the file.
	data, err := input.ReadFile(path, input.MaxCassette)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	if _, err := input.CheckYAML(path, data); err != nil {
		return nil, fmt.Errorf("cassette %w", err)
	}
	var c Cassette
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("cassette %w", input.YAMLError(path, err))
	}
	if c.Version != cassetteVersion {
		return nil, fmt.Errorf("cassette %s: version %d, this engram reads version %d", path, c.Version, cassetteVersion)
	}
	for i, in := range c.Interactions {
		if in.Request.Kind != "chat" && in.Request.Kind != "embed" {
			return nil, fmt.Errorf("cassette %s: interaction %d: request kind %q, want chat or embed", path, i+1, in.Request.Kind)
		}
		// A chat answers with a response, an embedding with vectors; either
		// may instead have failed. Anything else would load and then fail
		// (or answer the wrong kind) only when replayed.
		answer, answerName, other, otherName := in.Response != nil, "response", in.Vectors != nil, "vectors"
		if in.Request.Kind == "embed" {
			answer, answerName, other, otherName = other, otherName, answer, answerName
		}
		switch {
		case other:
			return nil, fmt.Errorf("cassette %s: interaction %d (%s) has %s, but %s exchanges have %s or error", path, i+1, in.Request.Kind, otherName, in.Request.Kind, answerName)
		case answer == (in.Error != nil):
			return nil, fmt.Errorf("cassette %s: interaction %d (%s) needs exactly one of %s or error", path, i+1, in.Request.Kind, answerName)
		}
	}
	return &c, nil
}

// Save writes the cassette to path atomically (a crash leaves the old file
// or the new one, never half of one).
func (c *Cassette) Save(path string) error {
	data, err := yaml.MarshalWithOptions(c.toYAML(), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return err
	}
	header := "# engram LLM cassette: recorded model exchanges, replayed with --llm replay --cassette FILE.\n# Format: docs/llm.md.\n"
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cassette-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // fails once renamed; otherwise best effort
	if _, err := tmp.WriteString(header + string(data)); err != nil {
		_ = tmp.Close() // the write's error is the one to report
		return err
	}
	// Flush to disk before the rename, or a power cut can leave the new name
	// pointing at an empty file.
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close() // the sync's error is the one to report
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// NewReplay answers from a cassette. Identical requests recorded several
// times are answered in recorded order, the last answer repeating once they
// run out. A request nothing matches fails with an *Error naming the closest
// recorded request and how it differs.
func NewReplay(c *Cassette, model string) Provider {
	return &replay{cassette: c, model: or(model, c.Model), used: make([]bool, len(c.Interactions))}
}

type replay struct {
	cassette *Cassette
	model    string
	mu       sync.Mutex
	used     []bool
}

func (r *replay) Info() Info { return Info{Provider: "replay", Model: r.model} }

func (r *replay) Complete(ctx context.Context, req Request) (Response, error) {
	in, err := r.find(recordChat(req), "chat")
	if err != nil {
		return Response{}, err
	}
	if in.Response == nil {
		return Response{}, &Error{Provider: "replay", Op: "chat", Msg: "the recorded exchange for this request has no chat answer"}
	}
	resp := *in.Response
	resp.Model = or(resp.Model, r.model)
	return resp, nil
}

func (r *replay) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	in, err := r.find(recordEmbed(req), "embed")
	if err != nil {
		// engram batches the texts it embeds as they come, so a replay
		// may group them otherwise than the recording did: on a miss
		// (never for a recorded failure, which replays as itself) each
		// text's recorded vector answers it.
		if in.Error != nil {
			return EmbedResponse{}, err
		}
		if vecs, ok := r.perText(req.Texts); ok {
			return EmbedResponse{Vectors: vecs, Model: r.model}, nil
		}
		return EmbedResponse{}, err
	}
	if in.Vectors == nil {
		return EmbedResponse{}, &Error{Provider: "replay", Op: "embed", Msg: "the recorded exchange for this request has no vectors"}
	}
	return EmbedResponse{Vectors: in.Vectors, Model: r.model}, nil
}

// perText finds a recorded vector for each text, in any successful embed
// exchange (ok false if one has none).
func (r *replay) perText(texts []string) ([][]float32, bool) {
	if len(texts) == 0 {
		return nil, false
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		for _, in := range r.cassette.Interactions {
			if in.Request.Kind != "embed" || in.Error != nil || len(in.Vectors) != len(in.Request.Texts) {
				continue
			}
			if at := slices.Index(in.Request.Texts, t); at >= 0 {
				out[i] = in.Vectors[at]
				break
			}
		}
		if out[i] == nil {
			return nil, false
		}
	}
	return out, true
}

// find returns the first unused matching interaction (or the last matching
// one when all are used), replaying recorded failures as failures.
func (r *replay) find(req Recorded, op string) (Interaction, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := -1
	for i, in := range r.cassette.Interactions {
		if !in.Request.matches(req) {
			continue
		}
		last = i
		if !r.used[i] {
			break
		}
	}
	if last < 0 {
		return Interaction{}, &Error{Provider: "replay", Op: op, Attempts: 1, Msg: r.describeMiss(req)}
	}
	r.used[last] = true
	in := r.cassette.Interactions[last]
	if in.Error != nil {
		return in, &Error{Provider: "replay", Op: op, Attempts: 1, Status: in.Error.Status, Transient: in.Error.Transient, Msg: in.Error.Message}
	}
	return in, nil
}

// describeMiss names the recorded request closest to req and what differs.
func (r *replay) describeMiss(req Recorded) string {
	best, bestScore := -1, -1.0
	for i, in := range r.cassette.Interactions {
		if in.Request.Kind != req.Kind {
			continue
		}
		if s := similarity(flatten(in.Request), flatten(req)); s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return fmt.Sprintf("the cassette has no %s exchanges; record one with --record on a live provider", req.Kind)
	}
	closest := r.cassette.Interactions[best].Request
	return fmt.Sprintf("no recorded exchange matches this request; the closest is #%d (%s), which differs in %s",
		best+1, summarize(closest), strings.Join(differences(closest, req), ", "))
}

func flatten(r Recorded) string {
	var b strings.Builder
	b.WriteString(r.System)
	for _, m := range r.Messages {
		b.WriteString("\n" + m.Role + ": " + m.Content)
	}
	b.WriteString(strings.Join(r.Texts, "\n"))
	return b.String()
}

// summarize shows a request in a few words: its last message, cut short.
func summarize(r Recorded) string {
	switch {
	case len(r.Messages) > 0:
		m := r.Messages[len(r.Messages)-1]
		return fmt.Sprintf("%s: %q", m.Role, Truncate(m.Content, 60))
	case len(r.Texts) > 0:
		return fmt.Sprintf("texts: %q", Truncate(r.Texts[0], 60))
	}
	return r.Kind
}

func differences(a, b Recorded) []string {
	var out []string
	if a.System != b.System {
		out = append(out, "the system prompt")
	}
	if !reflect.DeepEqual(normalize(a).Messages, normalize(b).Messages) {
		out = append(out, "the messages")
	}
	if a.JSON != b.JSON {
		out = append(out, "json")
	}
	if a.Schema != b.Schema {
		out = append(out, "the schema")
	}
	if !reflect.DeepEqual(normalize(a).Texts, normalize(b).Texts) {
		out = append(out, "the texts")
	}
	return out
}

// similarity is the Jaccard index of the two texts' word sets: cheap on long
// prompts, and good enough to point at the exchange meant.
func similarity(a, b string) float64 {
	wa, wb := words(a), words(b)
	if len(wa) == 0 && len(wb) == 0 {
		return 1
	}
	inter := 0
	for w := range wa {
		if wb[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(wa)+len(wb)-inter)
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(s)) {
		out[w] = true
	}
	return out
}

// NewRecorder wraps a live provider so that every exchange (and every final
// failure) is appended to the cassette at path, saved after each call so
// that nothing recorded is lost if engram stops.
func NewRecorder(p Provider, path string) (Provider, error) {
	info := p.Info()
	c := &Cassette{Version: cassetteVersion, Provider: info.Provider, Model: info.Model, Interactions: []Interaction{}}
	if err := c.Save(path); err != nil {
		return nil, fmt.Errorf("--record %s: %w", path, err)
	}
	return &recorder{next: p, path: path, cassette: c}, nil
}

type recorder struct {
	next     Provider
	path     string
	mu       sync.Mutex
	cassette *Cassette
}

func (r *recorder) Info() Info { return r.next.Info() }

func (r *recorder) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := r.next.Complete(ctx, req)
	in := Interaction{Request: recordChat(req)}
	in.Request.Model = or(req.Model, r.next.Info().Model)
	if err != nil {
		in.Error = failureOf(err)
	} else {
		in.Response = &resp
	}
	return resp, r.append(in, err)
}

func (r *recorder) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	resp, err := r.next.Embed(ctx, req)
	in := Interaction{Request: recordEmbed(req)}
	in.Request.Model = or(req.Model, r.next.Info().EmbedModel)
	if err != nil {
		in.Error = failureOf(err)
	} else {
		in.Vectors = resp.Vectors
	}
	return resp, r.append(in, err)
}

func failureOf(err error) *RecordedFailure {
	f := &RecordedFailure{Message: err.Error()}
	var e *Error
	if errors.As(err, &e) {
		f.Message, f.Status, f.Transient = e.Msg, e.Status, e.Transient
	}
	return f
}

// append records an exchange; a failure to save is reported (the call's own
// error, if any, wins).
func (r *recorder) append(in Interaction, callErr error) error {
	if errors.Is(callErr, context.Canceled) {
		return callErr // an interrupted call is not an exchange worth replaying
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cassette.Interactions = append(r.cassette.Interactions, in)
	if err := r.cassette.Save(r.path); err != nil && callErr == nil {
		return fmt.Errorf("recording to %s: %w", r.path, err)
	}
	return callErr
}

// The cassette as Save writes it: the same fields, with every text a
// yamlText that picks its own YAML style.
type (
	yamlCassette struct {
		Version      int               `yaml:"version"`
		Provider     yamlText          `yaml:"provider,omitempty"`
		Model        yamlText          `yaml:"model,omitempty"`
		Interactions []yamlInteraction `yaml:"interactions"`
	}
	yamlInteraction struct {
		Request  yamlRecorded  `yaml:"request"`
		Response *yamlResponse `yaml:"response,omitempty"`
		Vectors  [][]float32   `yaml:"vectors,omitempty"`
		Error    *yamlFailure  `yaml:"error,omitempty"`
	}
	yamlRecorded struct {
		Kind     yamlText      `yaml:"kind"`
		System   yamlText      `yaml:"system,omitempty"`
		Messages []yamlMessage `yaml:"messages,omitempty"`
		JSON     bool          `yaml:"json,omitempty"`
		Schema   yamlText      `yaml:"schema,omitempty"`
		Texts    []yamlText    `yaml:"texts,omitempty"`
		Model    yamlText      `yaml:"model,omitempty"`
	}
	yamlMessage struct {
		Role    yamlText `yaml:"role"`
		Content yamlText `yaml:"content"`
	}
	yamlResponse struct {
		Text  yamlText `yaml:"text"`
		Model yamlText `yaml:"model,omitempty"`
		Usage Usage    `yaml:"usage"`
	}
	yamlFailure struct {
		Message   yamlText `yaml:"message"`
		Status    int      `yaml:"status,omitempty"`
		Transient bool     `yaml:"transient,omitempty"`
	}
)

func (c *Cassette) toYAML() yamlCassette {
	out := yamlCassette{Version: c.Version, Provider: yamlText(c.Provider), Model: yamlText(c.Model),
		Interactions: make([]yamlInteraction, len(c.Interactions))}
	for i, in := range c.Interactions {
		r := in.Request
		y := yamlInteraction{Vectors: in.Vectors, Request: yamlRecorded{Kind: yamlText(r.Kind), System: yamlText(r.System),
			JSON: r.JSON, Schema: yamlText(r.Schema), Model: yamlText(r.Model)}}
		for _, m := range r.Messages {
			y.Request.Messages = append(y.Request.Messages, yamlMessage{yamlText(m.Role), yamlText(m.Content)})
		}
		for _, t := range r.Texts {
			y.Request.Texts = append(y.Request.Texts, yamlText(t))
		}
		if in.Response != nil {
			y.Response = &yamlResponse{yamlText(in.Response.Text), yamlText(in.Response.Model), in.Response.Usage}
		}
		if in.Error != nil {
			y.Error = &yamlFailure{yamlText(in.Error.Message), in.Error.Status, in.Error.Transient}
		}
		out.Interactions[i] = y
	}
	return out
}

// yamlText is a string that Save writes in go-yaml's own style (plain, or a
// literal block for texts over several lines, readable for prompts and
// answers) where that reads back exactly, and as a double-quoted string
// where it would not: go-yaml loses carriage returns, a first line that
// starts with a space or a tab (even after empty lines), lines of only spaces,
// trailing spaces on the last line, texts of only line
// breaks and the tabs of a one-line text, or writes a block that cannot be
// read back at all.
type yamlText string

// MarshalYAML implements yaml.InterfaceMarshaler.
func (t yamlText) MarshalYAML() (any, error) {
	if s := string(t); yamlSafe(s) {
		return s, nil
	}
	return quotedText(t), nil
}

func yamlSafe(s string) bool {
	if s == "" {
		return true
	}
	// A literal block takes its indentation from its first line that is not
	// empty, so that line must not start with a space or a tab.
	if first := strings.TrimLeft(s, "\n"); !utf8.ValidString(s) || first == "" || first[0] == ' ' || first[0] == '\t' {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r == 0x85, r == 0x2028, r == 0x2029, r == 0xfeff:
			return false // carriage returns, other controls, and what YAML 1.1 calls line breaks
		}
	}
	if !strings.Contains(s, "\n") {
		return !strings.Contains(s, "\t") // go-yaml drops tabs from plain scalars, and quotes the rest itself
	}
	for line := range strings.SplitSeq(s, "\n") {
		if line != "" && strings.Trim(line, " \t") == "" {
			return false
		}
	}
	if last := s[strings.LastIndexByte(s, '\n')+1:]; strings.TrimRight(last, " \t") != last {
		return false // trailing spaces on the last line are dropped
	}
	// The rules above are what testing go-yaml found; check that this text
	// does read back, nested as a cassette nests it, in case go-yaml has more.
	data, err := yaml.MarshalWithOptions(map[string][]map[string]string{"k": {{"k": s}}}, yaml.UseLiteralStyleIfMultiline(true))
	var back map[string][]map[string]string
	return err == nil && yaml.Unmarshal(data, &back) == nil && len(back["k"]) == 1 && back["k"][0]["k"] == s
}

// quotedText is written as a JSON string, which is a YAML double-quoted
// string: every character survives, escaped where need be.
type quotedText string

// MarshalYAML implements yaml.BytesMarshaler.
func (q quotedText) MarshalYAML() ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(q)); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}
