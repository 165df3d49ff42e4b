package core

import (
	"strconv"
	"strings"
	"sync"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/ids"
)

// maxSessions bounds the script sessions an engine remembers. A session
// forgotten and then seen again gets a new run number, so its ids still
// never repeat another's.
const maxSessions = 1024

// sessions holds each script session's id generator. A session is named
// "NAME/RUN" (conn.Request.Session): the runs of one NAME are numbered in
// the order the engine first sees them, and run K of NAME draws ids seeded
// by the engine's seed, NAME and K. So a script prints the same ids whether
// it runs alone or beside other clients' scripts, and two runs of it never
// draw the same ids.
type sessions struct {
	clock clock.Clock
	seed  string

	mu    sync.Mutex
	byKey map[string]*ids.Generator
	order []string       // keys, oldest first, for forgetting
	runs  map[string]int // NAME → runs seen
}

// generator returns key's generator, making it on first sight.
func (s *sessions) generator(key string) *ids.Generator {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.byKey[key]; ok {
		return g
	}
	if s.byKey == nil {
		s.byKey, s.runs = map[string]*ids.Generator{}, map[string]int{}
	}
	name := key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		name = key[:i]
	}
	run := s.runs[name]
	s.runs[name] = run + 1
	g := ids.New(s.clock, s.seed+" session "+name+" run "+strconv.Itoa(run))
	if len(s.order) >= maxSessions {
		delete(s.byKey, s.order[0])
		s.order = s.order[1:]
	}
	s.byKey[key] = g
	s.order = append(s.order, key)
	return g
}
