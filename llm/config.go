package llm

import (
	"fmt"
	"time"
)

// Providers lists the values --llm accepts.
var Providers = []string{"offline", "ollama", "openai", "replay"}

// Config is how the user asked for a model (the --llm family of flags).
type Config struct {
	Provider string        // --llm
	Model    string        // --model
	URL      string        // --llm-url
	Timeout  time.Duration // --llm-timeout
	Cassette string        // --cassette (replay)
	Record   string        // --record (live providers)
}

// New builds the provider cfg asks for.
func New(cfg Config) (Provider, error) {
	switch cfg.Provider {
	case "", "offline":
		return Offline{}, nil
	case "ollama", "openai", "replay":
		return nil, fmt.Errorf("--llm %s: this build of engram has no %s provider yet; run with --llm offline (the default)", cfg.Provider, cfg.Provider)
	}
	return nil, fmt.Errorf("--llm %q: unknown provider; use one of offline, ollama, openai, replay", cfg.Provider)
}
