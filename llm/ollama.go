package llm

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Ollama defaults.
const (
	OllamaDefaultHost  = "http://127.0.0.1:11434"
	OllamaDefaultModel = "llama3.2"
)

// ollama speaks Ollama's native API: POST /api/chat (stream off, `format`
// for JSON) and POST /api/embed.
type ollama struct {
	http       jsonHTTP
	model      string
	embedModel string
}

// OllamaHost resolves the server address: the explicit URL if given, else
// OLLAMA_HOST, else the default. It reads both as Ollama's own client reads
// OLLAMA_HOST: surrounding quotes and spaces are dropped; a bare host or
// host:port means http and port 11434, while a URL with a scheme but no port
// means that scheme's port (80 for http, 443 for https), so a server behind a
// reverse proxy is reachable as https://host; and 0.0.0.0 (Ollama's "listen
// everywhere") or an empty host means this machine.
func OllamaHost(explicit, env string) string {
	host := or(unquote(explicit), unquote(env))
	if host == "" {
		return OllamaDefaultHost
	}
	defaultPort := "11434"
	switch {
	case strings.HasPrefix(strings.ToLower(host), "http://"):
		defaultPort = "80"
	case strings.HasPrefix(strings.ToLower(host), "https://"):
		defaultPort = "443"
	case strings.Contains(host, "://"):
	default:
		host = "http://" + host
	}
	if u, err := url.Parse(host); err == nil {
		name, port := u.Hostname(), u.Port()
		if port == "" {
			port = defaultPort
		}
		if name == "" || name == "0.0.0.0" || name == "::" { // listen-everywhere addresses: connect locally
			name = "127.0.0.1"
		}
		u.Host = net.JoinHostPort(name, port)
		host = u.String()
	}
	return strings.TrimRight(host, "/")
}

// unquote drops the spaces and quotes a shell or a unit file leaves around a value.
func unquote(s string) string {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), `"'`))
}

func newOllama(host, model, embedModel string, client *http.Client, now func() time.Time) *ollama {
	if model == "" {
		model = OllamaDefaultModel
	}
	if embedModel == "" {
		embedModel = model
	}
	return &ollama{
		http: jsonHTTP{
			provider: "ollama", baseURL: host, client: client, now: now, header: http.Header{},
			unreachable: "is Ollama running (ollama serve)? Point engram at it with OLLAMA_HOST or --llm-url",
		},
		model:      model,
		embedModel: embedModel,
	}
}

func (o *ollama) Info() Info {
	return Info{Provider: "ollama", Model: o.model, EmbedModel: o.embedModel}
}

type ollamaChatRequest struct {
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Stream   bool            `json:"stream"`
	Format   json.RawMessage `json:"format,omitempty"`
	Options  map[string]any  `json:"options,omitempty"`
}

type ollamaChatResponse struct {
	Model   string  `json:"model"`
	Message Message `json:"message"`
	Done    bool    `json:"done"`
	// Token counts, as Ollama names them.
	PromptEvalCount int `json:"prompt_eval_count"`
	EvalCount       int `json:"eval_count"`
}

func (o *ollama) Complete(ctx context.Context, req Request) (Response, error) {
	body := ollamaChatRequest{Model: or(req.Model, o.model), Messages: withSystem(req), Stream: false}
	switch {
	case len(req.Schema) > 0:
		body.Format = req.Schema // structured output: the schema itself
	case req.JSON:
		body.Format = json.RawMessage(`"json"`)
	}
	options := map[string]any{}
	if req.Temperature != nil {
		options["temperature"] = *req.Temperature
	}
	if req.MaxTokens > 0 {
		options["num_predict"] = req.MaxTokens
	}
	if len(options) > 0 {
		body.Options = options
	}
	var out ollamaChatResponse
	if err := o.http.post(ctx, "chat", "/api/chat", body, &out); err != nil {
		return Response{}, err
	}
	return Response{Text: out.Message.Content, Model: or(out.Model, body.Model),
		Usage: Usage{PromptTokens: out.PromptEvalCount, CompletionTokens: out.EvalCount}}, nil
}

type ollamaEmbedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type ollamaEmbedResponse struct {
	Model      string      `json:"model"`
	Embeddings [][]float32 `json:"embeddings"`
}

func (o *ollama) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	body := ollamaEmbedRequest{Model: or(req.Model, o.embedModel), Input: req.Texts}
	var out ollamaEmbedResponse
	if err := o.http.post(ctx, "embed", "/api/embed", body, &out); err != nil {
		return EmbedResponse{}, err
	}
	if len(out.Embeddings) != len(req.Texts) {
		return EmbedResponse{}, &Error{Provider: "ollama", Op: "embed",
			Msg: "the server returned a different number of embeddings than texts sent"}
	}
	return EmbedResponse{Vectors: out.Embeddings, Model: or(out.Model, body.Model)}, nil
}

// withSystem is the request's messages with the system prompt first.
func withSystem(req Request) []Message {
	msgs := make([]Message, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, Message{Role: "system", Content: req.System})
	}
	return append(msgs, req.Messages...)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
