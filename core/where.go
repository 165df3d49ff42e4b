package core

import (
	"os"

	"github.com/engram-console/engram/core/conn"
)

// Where says that an engine is always served from this process, the owner
// of its data directory: the console shows "owner" for it.
func (e *Engine) Where() conn.Where { return conn.Where{Owner: true, PID: os.Getpid()} }

var _ conn.Locator = (*Engine)(nil)
