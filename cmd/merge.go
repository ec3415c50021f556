package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/userfile"
)

type mergeOptions struct {
	f     *Factory
	ctx   context.Context
	Files []string
	Out   string

	maxDocument int64
}

func newMergeCmd(f *Factory, run func(*mergeOptions) error) *cobra.Command {
	opts := &mergeOptions{f: f, maxDocument: userfile.MaxDocument}
	c := &cobra.Command{
		Use:   "merge SEGMENT.json...",
		Short: "Merge the documents of a segmented load run into the whole run",
		Long: `Merge the load documents of the segments of one plan (load --segment I/N, each
run on its own machine or pod) into the document of the whole run, losslessly:
counts summed, the per-second timeline merged, the latency histograms merged
from the HDR snapshots every segment carries (the percentiles are those of
one histogram of every request), the thresholds re-evaluated, and with
--expect the verdict on the admitted count judged by replaying every
segment's arrivals through the model, as one run of the whole plan would be.

Refused (exit 2): documents of different plans (target, method, rate,
duration, identities, run id, number of segments, --start-at, --expect,
thresholds, --headers), the same segment twice, a document that is not a
segment's, and documents inconsistent with their own plan: segments that
started more than 1m apart (a forged or wrong clock would stretch the run
over the years between), more iterations, arrivals or seconds of timeline
than the plan can fill, more than 1,000 notes, strings and maps no
document holds (checked in one pass before a file is read into memory).
A missing segment is not an error: the merge is partial, says which are
missing, and its segments check fails (exit 1).

Output (-o) as load's: text, json (a load document for 'ratelimit report',
--out FILE too), markdown, junit. Exit codes: 0 pass, 1 a check failed (or
segments are missing), 2 bad input.`,
		Example: `  # four segments on one machine, starting together, against the address
  # 'ratelimit serve --addr 127.0.0.1:0' printed
  start=$(date -u -d '+5 sec' +%Y-%m-%dT%H:%M:%SZ)
  for i in 0 1 2 3; do
    ratelimit load --target http://127.0.0.1:PORT/hello --rate 2000/s --duration 60s \
      --segment $i/4 --start-at "$start" --expect token-bucket:burst=10,rate=5/s \
      -o json > seg$i.json &
  done; wait
  ratelimit merge seg*.json --out run.json
  ratelimit report run.json --html run.html`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.ctx = c.Context()
			opts.Files = args
			if run != nil {
				return run(opts)
			}
			return runMerge(opts)
		},
	}
	c.Flags().StringVar(&opts.Out, "out", "", "also write the merged JSON document to FILE (for 'ratelimit report')")
	return c
}

func runMerge(opts *mergeOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	if len(opts.Files) == 0 {
		return exitcode.Usagef("no documents; pass the segments' load documents (load --segment I/N -o json)")
	}
	var docs []*tally.Result
	stdin := 0
	for _, name := range opts.Files {
		var d report.Document
		data, err := readDocument(f, name, opts.maxDocument, &stdin)
		if err == nil {
			d, err = report.Decode(data)
		}
		if errors.Is(err, report.ErrDocument) {
			return exitcode.Usagef("merge: %s: %v", report.Printable(name), err)
		}
		if err != nil {
			return err
		}
		res, ok := d.Value.(*tally.Result)
		if !ok {
			return exitcode.Usagef("merge: %s is a %s document, not a load run's", report.Printable(name), d.Kind)
		}
		docs = append(docs, res)
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()
	m, err := tally.Merge(docs)
	if err != nil {
		return err
	}
	if err := em.emit(m); err != nil {
		return err
	}
	if m.Verdict != "pass" {
		return exitcode.Failf("merge: %s", strings.Join(m.VerdictMessages, "; "))
	}
	return nil
}
