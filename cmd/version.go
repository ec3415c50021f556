package cmd

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/version"
)

type versionOptions struct {
	f *Factory
}

func newVersionCmd(f *Factory, run func(*versionOptions) error) *cobra.Command {
	opts := &versionOptions{f: f}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version and VCS revision of this build",
		Long: `Print the module version and the VCS revision, commit time and whether the
tree was modified, as the Go toolchain stamped them into the binary
("(devel)" for a local build without a module version). -o json prints
the same as one JSON object. ratelimit --version prints the text line.`,
		Example: `  ratelimit version
  ratelimit version -o json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if run != nil {
				return run(opts)
			}
			return runVersion(opts)
		},
	}
	return c
}

func runVersion(opts *versionOptions) error {
	f := opts.f
	format, err := f.Format("text", "json")
	if err != nil {
		return err
	}
	in := version.Get()
	if format == "json" {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	_, err = fmt.Fprintln(f.IO.Out, in.String())
	return err
}
