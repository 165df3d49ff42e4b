package episodic

import (
	"errors"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// A conversation's thread on an explicit channel (issue 14, bug 6).
//
// The rule: on web or app, a user's message of a conversation without
// thread_id continues the thread the conversation's latest message on
// that channel went to, and starts one if there is none; new_thread
// starts another, which the messages after it continue; a message with
// thread_id goes there, and the messages after it continue that one.
// The thread is stored (episodic/conv/<conversation>/<channel>/<principal>: each
// agent of a shared conversation keeps its own) as the
// message is, so that the rule holds the same after a restart as within
// one run.

// conversationThread is the record under conversationKey.
type conversationThread struct {
	ThreadID string `json:"thread_id"`
}

// conversationThread is the thread req's conversation continues on req's
// explicit channel, or nil: none yet, a new one asked for, or one that
// principal may no longer write (its messages then start a thread of its
// own rather than fail).
func (e *Episodic) conversationThread(tx *storage.Tx, principal string, req MessageRequest) (*Thread, error) {
	if req.Conversation == "" || req.NewThread || req.Speaker != "user" {
		return nil, nil
	}
	var rec conversationThread
	switch err := tx.GetJSON(conversationKey(req.Conversation, req.Channel, principal), &rec); {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	a, err := loadACL(tx, rec.ThreadID)
	if err != nil {
		return nil, err
	}
	if access.Check(principal, a, access.Write, threadObject(rec.ThreadID), e.env.Clock.Now()) != nil {
		return nil, nil
	}
	t, err := loadThread(tx, rec.ThreadID)
	if err != nil {
		if errs.KindOf(err) == errs.NotFound {
			return nil, nil
		}
		return nil, err
	}
	return t, nil
}
