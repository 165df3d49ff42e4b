package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// OpenAI-compatible defaults.
const (
	OpenAIDefaultURL        = "https://api.openai.com/v1"
	OpenAIDefaultModel      = "gpt-4o-mini"
	OpenAIDefaultEmbedModel = "text-embedding-3-small"
)

// openAI speaks the OpenAI chat completions and embeddings API, which most
// hosted and local servers (vLLM, llama.cpp, LM Studio, Ollama's /v1) offer.
type openAI struct {
	http       jsonHTTP
	model      string
	embedModel string
}

func newOpenAI(baseURL, apiKey, model, embedModel string, client *http.Client, now func() time.Time) *openAI {
	if model == "" {
		model = OpenAIDefaultModel
	}
	if embedModel == "" {
		embedModel = OpenAIDefaultEmbedModel
	}
	header := http.Header{}
	if apiKey != "" {
		header.Set("Authorization", "Bearer "+apiKey)
	}
	return &openAI{
		http: jsonHTTP{
			provider: "openai", baseURL: strings.TrimRight(baseURL, "/"), client: client, now: now, header: header,
			unreachable: "check --llm-url (or OPENAI_BASE_URL), e.g. http://127.0.0.1:8000/v1",
		},
		model:      model,
		embedModel: embedModel,
	}
}

func (o *openAI) Info() Info {
	return Info{Provider: "openai", Model: o.model, EmbedModel: o.embedModel}
}

type openAIChatRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
}

type openAIChatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func (o *openAI) Complete(ctx context.Context, req Request) (Response, error) {
	body := openAIChatRequest{Model: or(req.Model, o.model), Messages: withSystem(req),
		Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	switch {
	case len(req.Schema) > 0:
		format, _ := json.Marshal(map[string]any{
			"type":        "json_schema",
			"json_schema": map[string]any{"name": "answer", "schema": req.Schema},
		})
		body.ResponseFormat = format
	case req.JSON:
		body.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
	}
	var out openAIChatResponse
	if err := o.http.post(ctx, "chat", "/chat/completions", body, &out); err != nil {
		return Response{}, err
	}
	if len(out.Choices) == 0 {
		return Response{}, &Error{Provider: "openai", Op: "chat", Msg: "the server answered with no choices"}
	}
	msg := out.Choices[0].Message
	if msg.Content == nil {
		reason := "the model returned no content (finish_reason " + out.Choices[0].FinishReason + ")"
		if msg.Refusal != nil {
			reason = "the model refused: " + *msg.Refusal
		}
		return Response{}, &Error{Provider: "openai", Op: "chat", Msg: reason}
	}
	return Response{Text: *msg.Content, Model: or(out.Model, body.Model),
		Usage: Usage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}}, nil
}

type openAIEmbedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type openAIEmbedResponse struct {
	Model string `json:"model"`
	Data  []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func (o *openAI) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	body := openAIEmbedRequest{Model: or(req.Model, o.embedModel), Input: req.Texts}
	var out openAIEmbedResponse
	if err := o.http.post(ctx, "embed", "/embeddings", body, &out); err != nil {
		return EmbedResponse{}, err
	}
	vectors := make([][]float32, len(req.Texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(vectors) {
			return EmbedResponse{}, &Error{Provider: "openai", Op: "embed", Msg: "the server returned an embedding for a text it was not sent"}
		}
		vectors[d.Index] = d.Embedding
	}
	for _, v := range vectors {
		if v == nil {
			return EmbedResponse{}, &Error{Provider: "openai", Op: "embed", Msg: "the server returned fewer embeddings than texts sent"}
		}
	}
	return EmbedResponse{Vectors: vectors, Model: or(out.Model, body.Model)}, nil
}
