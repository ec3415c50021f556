package cmd

import (
	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

type completionOptions struct {
	f     *Factory
	Shell string
	root  *cobra.Command
}

func newCompletionCmd(f *Factory, run func(*completionOptions) error) *cobra.Command {
	opts := &completionOptions{f: f}
	c := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print the completion script for a shell on standard output. Load it with:

  bash:        source <(ratelimit completion bash)
  zsh:         ratelimit completion zsh > "${fpath[1]}/_ratelimit"
  fish:        ratelimit completion fish | source
  powershell:  ratelimit completion powershell | Out-String | Invoke-Expression`,
		Example: `  ratelimit completion bash > /etc/bash_completion.d/ratelimit
  source <(ratelimit completion bash)`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Shell, opts.root = args[0], c.Root()
			if run != nil {
				return run(opts)
			}
			return runCompletion(opts)
		},
	}
	return c
}

func runCompletion(opts *completionOptions) error {
	// the script is the only output; -o other than text is refused
	if _, err := opts.f.Format(); err != nil {
		return err
	}
	w := opts.f.IO.Out
	switch opts.Shell {
	case "bash":
		return opts.root.GenBashCompletionV2(w, true)
	case "zsh":
		return opts.root.GenZshCompletion(w)
	case "fish":
		return opts.root.GenFishCompletion(w, true)
	case "powershell":
		return opts.root.GenPowerShellCompletionWithDesc(w)
	}
	return exitcode.Usagef("unknown shell %q; use bash, zsh, fish or powershell", opts.Shell)
}
