package storage

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Key prefixes. Every key in an engram store begins with exactly one of these;
// this table is the single place that hands them out, so two parts of engram
// can never write over each other's keys.
//
//	prefix    what lives under it                                  value
//	-------   ---------------------------------------------------  -----------------
//	meta/     store metadata: schema version, id epoch              small JSON / bytes
//	            meta/tour/<agent>            what the agent's tour made (tour/)  JSON
//	seq/      Badger sequences (leased counters, see Sequence)      Badger's own
//	idx/      secondary indexes: idx/<space>/<field>/<value>/<id>   empty
//	trace/    turn trace entries: trace/<seq>                       JSON trace.Entry
//	turn/     turn records: turn/<turn id>                          JSON turn record
//	cortex/   goals, actions, questions (core/cortex):
//	            cortex/item/<id>            the item as it stands     JSON cortex.Item
//	            cortex/ver/<id>/<version>   the item at each version  JSON cortex.Item
//	            cortex/audit/<id>/<version> the mutation making it    JSON cortex.Mutation
//	            cortex/head/<id>            the latest entry's hash   hex text
//	          and its indexes under idx/cortex/ (see core/cortex/index.go)
//	history/  conversations (core/history), in the conversation's backend store:
//	            history/conv/<conv>          settings and counters     JSON history.Conversation
//	            history/utt/<conv>/<index>   utterances (buffer, archive) JSON history.Utterance
//	            history/sum/<conv>           the running summary       JSON
//	            history/vec/<conv>/<index>   embeddings (with a model) float32s
//	            history/fold/<conv>/<index>  an eviction awaiting its fold into the summary, JSON
//	          and in the engine's store, history/where/<conv> → the backend;
//	          search postings idx/history/t/<conv>/<term>/<index>.<speaker><tf>.<length>, key only
//	plan/     plans (planner):
//	            plan/<id>                    the plan, checkpoint-encoded (zstd JSON)
//	            plan/<id>/s/<subtask>        a subtask's progress since, JSON
//	memory/   memory stores (core/memory):
//	            memory/store/<store>         settings and counters     JSON
//	            memory/item/<store>/<id>     memory items              JSON memory.Item
//	            memory/vec/<store>/<id>      embeddings (with a model) float32s
//	          and their indexes under idx/memory/<store>/: time/ and imp/ for live
//	          items, del/time/ and del/imp/ for soft-forgotten ones, agent, type,
//	          tag, episode; postings under idx/memory%2F<store>/t/ end in a mark,
//	          "-" live or "d" forgotten. The store's JSON also keeps imp_low (the
//	          least important live items) and imp_from (where eviction resumes).
//	episodic/ threads, turns, episodes and linking decisions (core/episodic):
//	            episodic/thread/<id>, episodic/turn/<thread>/<n>, episodic/arch/<thread>/<n>,
//	            episodic/ep/<id>, episodic/xep/<id>, episodic/dec/<id>,
//	            episodic/pending/<episode>, episodic/tuning (see core/episodic/store.go);
//	          threads by last activity under idx/episodic/act/<time>/<id>, key only
//	token/    bearer tokens, hashed (core/tokens)
//	idem/     requests under their idempotency key (core/kit/idempotency.go):
//	            idem/<principal>/<key>       pending, then its result   JSON
//	          and by time under idx/idem/at/<time>/<principal>/<key>, key only
//
// Subsystems add their prefix here when they land. Index keys carry no value:
// queries are answered from key-only scans, then only matching records are read.
const (
	PrefixMeta    = "meta/"
	PrefixSeq     = "seq/"
	PrefixIndex   = "idx/"
	PrefixTrace   = "trace/"
	PrefixTurn    = "turn/"
	PrefixCortex  = "cortex/"
	PrefixHistory = "history/"
	PrefixMemory  = "memory/"
	PrefixPlan    = "plan/"
	// PrefixEpisodic: threads, turns, episodes, linking decisions (core/episodic/store.go).
	PrefixEpisodic = "episodic/"
	// PrefixToken: bearer tokens, hashed (core/tokens).
	PrefixToken = "token/"
	// PrefixIdempotency: requests recorded under their idempotency key (core/kit).
	PrefixIdempotency = "idem/"
)

// Key joins a prefix (one of the Prefix constants) and parts into a key. Parts
// are escaped so that a part may itself contain "/" without breaking the
// key's structure; SplitKey undoes it.
func Key(prefix string, parts ...string) []byte {
	var b strings.Builder
	b.WriteString(prefix)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(escapePart(p))
	}
	return []byte(b.String())
}

// PrefixKey is Key with a trailing "/", for scanning every key below parts.
func PrefixKey(prefix string, parts ...string) []byte {
	k := Key(prefix, parts...)
	if len(parts) == 0 {
		return k
	}
	return append(k, '/')
}

// IndexKey builds idx/<space>/<field>/<value>/<id>. Value should already be
// in sortable form (see Uint64, Int64, Time) when range scans matter.
func IndexKey(space, field, value, id string) []byte {
	return Key(PrefixIndex, space, field, value, id)
}

// SplitKey returns the unescaped parts of a key after the given prefix.
func SplitKey(prefix string, key []byte) []string {
	rest := strings.TrimPrefix(string(key), prefix)
	if rest == "" {
		return nil
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		parts[i] = unescapePart(p)
	}
	return parts
}

// LastPart is the last unescaped part of a key: for an index key, the id.
func LastPart(key []byte) string {
	s := string(key)
	return unescapePart(s[strings.LastIndexByte(s, '/')+1:])
}

// Uint64 renders n as 16 hex digits, so that byte order equals numeric order.
func Uint64(n uint64) string { return fmt.Sprintf("%016x", n) }

// ParseUint64 reverses Uint64: s must be exactly 16 hex digits.
func ParseUint64(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("storage: %q is not a key number (16 hex digits)", s)
	}
	n, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("storage: %q is not a key number (16 hex digits)", s)
	}
	return n, nil
}

// Int64 renders a signed number so that byte order equals numeric order,
// negative numbers included (the sign bit is flipped).
func Int64(n int64) string { return Uint64(uint64(n) ^ (1 << 63)) }

// Time renders t as a sortable key part: seconds since the epoch (sortable
// with their sign), then nanoseconds. Seconds rather than UnixNano, whose
// int64 only spans 1678 to 2262: any year an RFC 3339 time can say sorts
// right.
func Time(t time.Time) string { return Int64(t.Unix()) + fmt.Sprintf("%08x", t.Nanosecond()) }

// ParseTime reverses Time (the time in UTC).
func ParseTime(s string) (time.Time, error) {
	bad := fmt.Errorf("storage: %q is not a key time (24 hex digits)", s)
	if len(s) != 24 {
		return time.Time{}, bad
	}
	sec, err := ParseUint64(s[:16])
	if err != nil {
		return time.Time{}, bad
	}
	nsec, err := strconv.ParseUint(s[16:], 16, 32)
	if err != nil || nsec >= 1e9 {
		return time.Time{}, bad
	}
	return time.Unix(int64(sec^(1<<63)), int64(nsec)).UTC(), nil
}

func escapePart(p string) string {
	if !strings.ContainsAny(p, "%/") {
		return p
	}
	p = strings.ReplaceAll(p, "%", "%25")
	return strings.ReplaceAll(p, "/", "%2F")
}

func unescapePart(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	p = strings.ReplaceAll(p, "%2F", "/")
	return strings.ReplaceAll(p, "%25", "%")
}
