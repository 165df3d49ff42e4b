// Command mkthesaurus derives core/retrieval's thesaurus (thesaurus.txt.gz)
// from WordNet 3.0's database files. Run it from core/retrieval with
// `go generate` (see thesaurus.go), after fetching WordNet:
//
//	cd /tmp && apt-get download wordnet-base && dpkg -x wordnet-base_*.deb wn
//	go run ./internal/mkthesaurus -wordnet /tmp/wn/usr/share/wordnet -o thesaurus.txt.gz
//
// The table is small on purpose: only common words (a lemma with a sense
// tagged in WordNet's SemCor counts), only their most frequent senses,
// only single-word lemmas that are common too, everything reduced to the
// Snowball stem core/retrieval's Analyzer indexes. A line is
//
// stem<TAB>synonyms<TAB>hypernyms<TAB>hyponyms<TAB>derived
//
// the synonyms being the other lemmas of the word's senses' synsets, the
// hypernyms those of their direct hypernyms, the hyponyms those of their
// direct hyponyms (the commonest first), the derived words those WordNet
// links to the word itself as derivationally related ("employer" and
// "employ"); each list in order of sense frequency, each of a bounded
// length. The output is the same for the same input.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kljensen/snowball/english"
)

// synset is one WordNet synset: its lemmas and its direct hypernyms.
type synset struct {
	words []string
	hyper []string // "pos:offset"
	hypo  []string
	// deriv are the words derivationally related to each of words
	// ("employer" to "employ"), as "pos:offset:word number".
	deriv map[int][]string
}

func main() {
	dir := flag.String("wordnet", "/tmp/wn/usr/share/wordnet", "WordNet 3.0's dict directory (index.noun, data.noun, ...)")
	out := flag.String("o", "thesaurus.txt.gz", "the table to write (gzip)")
	senses := flag.Int("senses", 3, "the most frequent senses of a word to read")
	maxSyn := flag.Int("max-synonyms", 12, "synonym stems kept per word")
	maxHyp := flag.Int("max-hypernyms", 6, "hypernym stems kept per word")
	maxHypo := flag.Int("max-hyponyms", 12, "hyponym stems kept per word")
	flag.Parse()
	if err := run(*dir, *out, *senses, *maxSyn, *maxHyp, *maxHypo); err != nil {
		fmt.Fprintln(os.Stderr, "mkthesaurus:", err)
		os.Exit(1)
	}
}

var posFiles = []struct{ name, tag string }{{"noun", "n"}, {"verb", "v"}, {"adj", "a"}, {"adv", "r"}}

// entry is a word's senses of one part of speech, most frequent first.
type entry struct {
	lemma, pos string
	offsets    []string
	tagged     int
}

func run(dir, out string, senses, maxSyn, maxHyp, maxHypo int) error {
	synsets := map[string]*synset{}
	var entries []entry
	common := map[string]bool{} // lemmas with a tagged sense
	freq := map[string]int{}    // a lemma's tagged senses, all parts of speech
	for _, pf := range posFiles {
		if err := readData(filepath.Join(dir, "data."+pf.name), pf.tag, synsets); err != nil {
			return err
		}
		es, err := readIndex(filepath.Join(dir, "index."+pf.name), pf.tag)
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.tagged > 0 {
				common[e.lemma] = true
				freq[e.lemma] += e.tagged
			}
		}
		entries = append(entries, es...)
	}
	// A word is usable when it is one lower-case word, not a stop word;
	// a word to expand into must be common too (rare synonyms are noise).
	usable := func(w string, needCommon bool) bool {
		if needCommon && !common[w] || len(w) < 3 {
			return false
		}
		for _, r := range w {
			if r < 'a' || r > 'z' {
				return false
			}
		}
		return !english.IsStopWord(w)
	}
	type lists struct{ syn, hyp, hypo, der []string }
	table := map[string]*lists{}
	add := func(list *[]string, self, st string, limit int) {
		if st != self && st != "" && len(*list) < limit && !slices.Contains(*list, st) {
			*list = append(*list, st)
		}
	}
	for _, e := range entries {
		if !usable(e.lemma, false) {
			continue
		}
		self := english.Stem(e.lemma, false)
		l := table[self]
		if l == nil {
			l = &lists{}
			table[self] = l
		}
		// The senses read: the most frequent, as many as SemCor tags
		// (at least one, at most senses).
		for _, off := range e.offsets[:min(senses, max(1, e.tagged), len(e.offsets))] {
			s := synsets[e.pos+":"+off]
			if s == nil {
				continue
			}
			for i, w := range s.words {
				if usable(w, true) {
					add(&l.syn, self, english.Stem(w, false), maxSyn)
				}
				if w != e.lemma {
					continue
				}
				for _, d := range s.deriv[i] {
					pos, rest, _ := strings.Cut(d, ":")
					off, num, _ := strings.Cut(rest, ":")
					n, _ := strconv.Atoi(num)
					if ds := synsets[pos+":"+off]; ds != nil && n >= 1 && n <= len(ds.words) {
						if w := ds.words[n-1]; usable(w, true) {
							add(&l.der, self, english.Stem(w, false), maxSyn)
						}
					}
				}
			}
			// Narrower words, the commonest first (a word with more
			// senses tagged in SemCor is a commoner word).
			var narrower []string
			for _, h := range s.hypo {
				if hs := synsets[h]; hs != nil {
					for _, w := range hs.words {
						if usable(w, true) {
							narrower = append(narrower, w)
						}
					}
				}
			}
			slices.SortStableFunc(narrower, func(a, b string) int { return freq[b] - freq[a] })
			for _, w := range narrower {
				add(&l.hypo, self, english.Stem(w, false), maxHypo)
			}
			for _, h := range s.hyper {
				if hs := synsets[h]; hs != nil {
					for _, w := range hs.words {
						if usable(w, true) {
							add(&l.hyp, self, english.Stem(w, false), maxHyp)
						}
					}
				}
			}
		}
	}
	stems := make([]string, 0, len(table))
	for st, l := range table {
		l.hyp = slices.DeleteFunc(l.hyp, func(h string) bool { return slices.Contains(l.syn, h) })
		l.der = slices.DeleteFunc(l.der, func(h string) bool { return slices.Contains(l.syn, h) })
		l.hypo = slices.DeleteFunc(l.hypo, func(h string) bool { return slices.Contains(l.syn, h) || slices.Contains(l.hyp, h) })
		if len(l.syn)+len(l.hyp)+len(l.hypo)+len(l.der) > 0 {
			stems = append(stems, st)
		}
	}
	slices.Sort(stems)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(zw)
	for _, st := range stems {
		l := table[st]
		if _, err := fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%s\n", st, strings.Join(l.syn, " "), strings.Join(l.hyp, " "), strings.Join(l.hypo, " "), strings.Join(l.der, " ")); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mkthesaurus: %d words\n", len(stems))
	return nil
}

// readIndex reads index.POS: each lemma's synsets, most frequent first,
// and how many of its senses are tagged in SemCor.
func readIndex(path, pos string) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	var out []entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue // the licence header
		}
		fs := strings.Fields(line)
		// lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
		if len(fs) < 6 {
			continue
		}
		synCnt, _ := strconv.Atoi(fs[2])
		pCnt, _ := strconv.Atoi(fs[3])
		i := 4 + pCnt
		if i+2 > len(fs) {
			continue
		}
		tagged, _ := strconv.Atoi(fs[i+1])
		offs := fs[i+2:]
		if len(offs) > synCnt {
			offs = offs[:synCnt]
		}
		out = append(out, entry{lemma: fs[0], pos: pos, offsets: offs, tagged: tagged})
	}
	return out, sc.Err()
}

// readData reads data.POS: each synset's lemmas and hypernym pointers.
func readData(path, pos string, into map[string]*synset) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue
		}
		if i := strings.Index(line, " | "); i >= 0 {
			line = line[:i]
		}
		fs := strings.Fields(line)
		// offset lex_filenum ss_type w_cnt(hex) word lex_id ... p_cnt ptr...
		if len(fs) < 4 {
			continue
		}
		wCnt, err := strconv.ParseInt(fs[3], 16, 32)
		if err != nil {
			continue
		}
		s := &synset{deriv: map[int][]string{}}
		i := 4
		// Word numbers (from 1) of the lemmas kept, by place.
		var kept []int
		for range wCnt {
			if i >= len(fs) {
				break
			}
			w := fs[i]
			// Adjectives may carry a syntactic marker: "big(a)".
			if j := strings.IndexByte(w, '('); j >= 0 {
				w = w[:j]
			}
			// Proper nouns keep their capitals in WordNet: leave them out.
			if w == strings.ToLower(w) {
				s.words = append(s.words, w)
				kept = append(kept, len(s.words)-1)
			} else {
				kept = append(kept, -1)
			}
			i += 2
		}
		if i < len(fs) {
			pCnt, _ := strconv.Atoi(fs[i])
			i++
			for range pCnt {
				if i+3 >= len(fs) {
					break
				}
				sym, off, ppos, st := fs[i], fs[i+1], fs[i+2], fs[i+3]
				if ppos == "s" {
					ppos = "a"
				}
				switch sym {
				case "@":
					s.hyper = append(s.hyper, ppos+":"+off)
				case "~":
					s.hypo = append(s.hypo, ppos+":"+off)
				case "+":
					// A lexical pointer: source and target word
					// numbers, two hex digits each.
					src, _ := strconv.ParseInt(st[:2], 16, 32)
					tgt, _ := strconv.ParseInt(st[2:], 16, 32)
					if src >= 1 && int(src) <= len(kept) && kept[src-1] >= 0 {
						s.deriv[kept[src-1]] = append(s.deriv[kept[src-1]], fmt.Sprintf("%s:%s:%d", ppos, off, tgt))
					}
				}
				i += 4
			}
		}
		into[pos+":"+fs[0]] = s
	}
	return sc.Err()
}
