package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
("(devel)" for a local build without a module version), one per line.
-o json prints the same as one JSON object (module, version, revision,
time, modified, go_version). ratelimit --version prints the first line.`,
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
	format, err := f.Format()
	if err != nil {
		return err
	}
	in := version.Get()
	if format == "json" {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	_, err = io.WriteString(f.IO.Out, versionText(in))
	return err
}

// versionText is the text form of 'ratelimit version': the one line of
// --version, then the module path, the VCS revision and the Go version,
// one per line.
func versionText(in version.Info) string {
	rev := "unknown (not stamped into this build; go build -buildvcs=true stamps it)"
	if in.Revision != "" {
		rev = in.Revision
		var extra []string
		if in.Time != "" {
			extra = append(extra, in.Time)
		}
		if in.Modified {
			extra = append(extra, "modified")
		}
		if len(extra) > 0 {
			rev += " (" + strings.Join(extra, ", ") + ")"
		}
	}
	return fmt.Sprintf("%s\nmodule:   %s\nversion:  %s\nrevision: %s\ngo:       %s\n", in.String(), in.Module, in.Version, rev, in.GoVersion)
}
