package evalret

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the result for people: per split, a row per category
// and retriever (each retriever under the first, so that the baseline
// stands beside the product's figure), the metrics in columns, then each
// retriever's median search time.
func WriteTable(w io.Writer, res *Result) error {
	name := res.Set
	if name == "" {
		name = "evaluation set"
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s: %s, %s, %s\n",
		name, plural(res.Conversations, "conversation"), plural(res.Turns, "turn"), plural(res.Questions, "question"))
	splits := []string{}
	runs := map[string][]Run{}
	for _, r := range res.Runs {
		if _, ok := runs[r.Split]; !ok {
			splits = append(splits, r.Split)
		}
		runs[r.Split] = append(runs[r.Split], r)
	}
	for _, split := range splits {
		rs := runs[split]
		fmt.Fprintf(b, "\nsplit %s (%s)\n", split, plural(rs[0].Overall.Questions, "question"))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		// tw writes into b, a strings.Builder: its writes cannot fail
		// until Flush, whose error is checked.
		_, _ = fmt.Fprintln(tw, "category\tn\tretriever\tR@1\tR@5\tR@10\tall@10\tMRR\tnDCG@10\t")
		row := func(label string, pick func(Run) (Scores, bool)) {
			first := true
			for _, r := range rs {
				s, ok := pick(r)
				if !ok {
					continue
				}
				l, n := "", ""
				if first {
					l, n = label, fmt.Sprint(s.Questions)
				}
				first = false
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", l, n, r.Retriever,
					s.Recall1, s.Recall5, s.Recall10, s.AllRecall10, s.MRR, s.NDCG10)
			}
		}
		for _, c := range Categories {
			row(c, func(r Run) (Scores, bool) {
				for _, s := range r.Categories {
					if s.Category == c {
						return s, true
					}
				}
				return Scores{}, false
			})
		}
		row("overall", func(r Run) (Scores, bool) { return r.Overall, true })
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range rs {
			fmt.Fprintf(b, "%s: search p50 %.3f ms", r.Retriever, r.SearchP50Ms)
			if r.Failed > 0 {
				fmt.Fprintf(b, "; %d searches failed (scored as misses), the first: %s", r.Failed, r.FirstFailure)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nR@k: share of questions with an evidence turn in the top k; all@10: with\n" +
		"every evidence turn in the top 10; MRR and nDCG@10 as in docs/eval.md.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// plural is "1 turn", "2 turns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
