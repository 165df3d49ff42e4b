//go:build sqlitebench

package history_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver, with FTS5 under -tags sqlite_fts5

	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/text"
)

// fts5Bench is the SQLite side of BenchmarkHistorySearchVsFTS5, loaded
// once (as benchData is).
var fts5Bench struct {
	n     int
	db    *sql.DB
	loadS float64
}

// loadFTS5 loads the same n utterances as loadSearchBench into an FTS5
// table in a database file on disk: the text (tokenizer porter unicode61:
// Porter stems, as engram's are Snowball's) and the speaker, unindexed,
// with the utterance index as rowid.
func loadFTS5(b *testing.B, n int) (*sql.DB, float64) {
	benchData.Lock()
	defer benchData.Unlock()
	if fts5Bench.db != nil && fts5Bench.n == n {
		return fts5Bench.db, fts5Bench.loadS
	}
	dir, err := os.MkdirTemp("", "engram-fts5-bench-")
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", filepath.Join(dir, "fts.db")+"?_journal_mode=WAL&_synchronous=NORMAL")
	if err != nil {
		b.Fatal(err)
	}
	benchData.closers = append(benchData.closers, func() {
		_ = db.Close()
		_ = os.RemoveAll(dir)
	})
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE utt USING fts5(text, speaker UNINDEXED, tokenize = 'porter unicode61')`); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO utt(rowid, text, speaker) VALUES (?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	for i, s := range searchBenchTexts(b, n) {
		if _, err := ins.Exec(i, s, speakerOf(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	// As a competent engineer would after a bulk load: merge the index's
	// segments into one.
	if _, err := db.Exec(`INSERT INTO utt(utt) VALUES ('optimize')`); err != nil {
		b.Fatal(err)
	}
	fts5Bench.n, fts5Bench.db, fts5Bench.loadS = n, db, time.Since(start).Seconds()
	return db, fts5Bench.loadS
}

// fts5Query is a query as FTS5 reads it with engram's meaning: any of the
// words (OR; FTS5's default is all of them), each quoted, stop words left
// out as engram leaves them out.
func fts5Query(q string) string {
	var words []string
	for _, w := range text.Words(q) {
		if text.Term(w) != "" {
			words = append(words, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
		}
	}
	return strings.Join(words, " OR ")
}

// BenchmarkHistorySearchVsFTS5: history.search against SQLite FTS5 with
// bm25() on the same 1,000,000 ~30-word utterances (newCorpus; user and
// assistant alternating), both on disk, in one run: the query mix of
// searchBenchQueries in turn, the best 10 by BM25 with their text, through
// history.Search (the Go API) and through database/sql ("SELECT rowid,
// text, speaker, bm25(utt) FROM utt WHERE utt MATCH ? ORDER BY bm25(utt)
// LIMIT 10", the words ORed). It reports p50/p99 of both and the ratios
// (engram's over SQLite's: under 1 is faster).
//
//	go test -tags 'sqlitebench sqlite_fts5' ./core/history -run '^$' -bench 'BenchmarkHistorySearchVsFTS5$' -benchtime 200x -timeout 60m
func BenchmarkHistorySearchVsFTS5(b *testing.B) {
	n := searchBenchSize(b)
	r, _ := loadSearchBench(b, n)
	db, loadS := loadFTS5(b, n)
	ctx := context.Background()
	// Both warm: engram's postings in memory, SQLite's pages in its cache.
	for _, q := range searchBenchQueries {
		if _, err := r.h.Search(ctx, r.call(), history.SearchRequest{Query: q}); err != nil {
			b.Fatal(err)
		}
		if _, err := fts5Search(db, q); err != nil {
			b.Fatal(err)
		}
	}
	engram := make([]time.Duration, 0, b.N)
	sqlite := make([]time.Duration, 0, b.N)
	found := [2]int{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := searchBenchQueries[i%len(searchBenchQueries)]
		start := time.Now()
		hits, err := r.h.Search(ctx, r.call(), history.SearchRequest{Query: q})
		engram = append(engram, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		rows, err := fts5Search(db, q)
		sqlite = append(sqlite, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		found[0] += len(hits)
		found[1] += rows
	}
	b.StopTimer()
	if found[0] == 0 || found[1] == 0 {
		b.Fatalf("found %v", found)
	}
	ep50, ep99 := quantile(engram, 0.50), quantile(engram, 0.99)
	sp50, sp99 := quantile(sqlite, 0.50), quantile(sqlite, 0.99)
	b.ReportMetric(ep50, "engram-p50-µs")
	b.ReportMetric(ep99, "engram-p99-µs")
	b.ReportMetric(sp50, "fts5-p50-µs")
	b.ReportMetric(sp99, "fts5-p99-µs")
	b.ReportMetric(ep50/sp50, "p50-ratio")
	b.ReportMetric(ep99/sp99, "p99-ratio")
	b.ReportMetric(loadS, "fts5-load-s")
}

// fts5Search is the SQLite side of one search: the best 10 rows, read.
func fts5Search(db *sql.DB, q string) (int, error) {
	rows, err := db.Query(`SELECT rowid, text, speaker, bm25(utt) FROM utt WHERE utt MATCH ? ORDER BY bm25(utt) LIMIT 10`, fts5Query(q))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			id            int64
			text, speaker string
			score         float64
		)
		if err := rows.Scan(&id, &text, &speaker, &score); err != nil {
			return 0, err
		}
		n++
	}
	return n, rows.Err()
}

// quantile is the q quantile of d, in microseconds (d is sorted).
func quantile(d []time.Duration, q float64) float64 {
	slices.Sort(d)
	return float64(d[int(q*float64(len(d)-1))].Nanoseconds()) / 1000
}
