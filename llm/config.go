package llm

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// Providers lists the values --llm accepts.
var Providers = []string{"offline", "ollama", "openai", "replay"}

// Config is how the user asked for a model (the --llm family of flags).
type Config struct {
	Provider   string        // --llm
	Model      string        // --model
	EmbedModel string        // --embed-model
	URL        string        // --llm-url
	Timeout    time.Duration // --llm-timeout, per attempt
	Retries    int           // --llm-retries: retries after the first attempt
	Cassette   string        // --cassette (replay)
	Record     string        // --record (live providers)
	// Getenv reads OLLAMA_HOST, OPENAI_BASE_URL and OPENAI_API_KEY (os.Getenv when nil).
	Getenv func(string) string
	// HTTPClient, Sleep and Now are for tests (defaults: a plain client, real sleeps, the wall clock).
	HTTPClient *http.Client
	Sleep      Sleeper
	Now        func() time.Time
}

// Validate checks that the flags fit together, naming the one that does not.
func (c Config) Validate() error {
	switch c.Provider {
	case "", "offline", "ollama", "openai", "replay":
	default:
		return fmt.Errorf("--llm %q: unknown provider; use one of %s", c.Provider, strings.Join(Providers, ", "))
	}
	live := c.Provider == "ollama" || c.Provider == "openai"
	switch {
	case c.Provider == "replay" && c.Cassette == "":
		return fmt.Errorf("--llm replay needs --cassette FILE (a cassette recorded with --record)")
	case c.Provider != "replay" && c.Cassette != "":
		return fmt.Errorf("--cassette only applies with --llm replay")
	case c.Record != "" && !live:
		return fmt.Errorf("--record only applies with a live provider (--llm ollama or --llm openai)")
	case c.URL != "" && !live:
		return fmt.Errorf("--llm-url only applies with --llm ollama or --llm openai")
	case c.Timeout < 0:
		return fmt.Errorf("--llm-timeout must be positive, e.g. 60s")
	case c.Retries < 0:
		return fmt.Errorf("--llm-retries must be 0 or more")
	}
	return nil
}

// New builds the provider c asks for. Live providers are wrapped so that
// each attempt is bounded by the timeout, transient failures are retried,
// exchanges are recorded when asked, and JSON answers are checked.
func New(c Config) (Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	now := c.Now
	if now == nil {
		// Wall time: a server's Retry-After date is in real time, whatever
		// the engine clock says.
		now = time.Now
	}
	var p Provider
	switch c.Provider {
	case "", "offline":
		return Offline{}, nil
	case "replay":
		cassette, err := LoadCassette(c.Cassette)
		if err != nil {
			return nil, fmt.Errorf("--cassette: %w", err)
		}
		return CheckJSON(NewReplay(cassette, c.Model)), nil
	case "ollama":
		p = newOllama(OllamaHost(c.URL, getenv("OLLAMA_HOST")), c.Model, c.EmbedModel, client, now)
	case "openai":
		base := or(c.URL, or(getenv("OPENAI_BASE_URL"), OpenAIDefaultURL))
		p = newOpenAI(base, getenv("OPENAI_API_KEY"), c.Model, c.EmbedModel, client, now)
	}
	p = WithRetry(p, RetryPolicy{Attempts: c.Retries + 1, Timeout: c.Timeout, Sleep: c.Sleep})
	if c.Record != "" {
		var err error
		if p, err = NewRecorder(p, c.Record); err != nil {
			return nil, err
		}
	}
	return CheckJSON(p), nil
}
