package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/spec"
)

func newCompletionCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script (box and host names come from boxes.yaml)",
		Long: `Print the completion script of a shell. Box and host names are completed
from the boxes.yaml in the current directory (or the one -f names). Load it:

  bash:  source <(boxes completion bash)        # or write it to /etc/bash_completion.d/boxes
  zsh:   boxes completion zsh > "${fpath[1]}/_boxes"
  fish:  boxes completion fish > ~/.config/fish/completions/boxes.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      between(1, 1, "completion needs one shell: bash, zsh or fish"),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(env.Out, true)
			case "zsh":
				return root.GenZshCompletion(env.Out)
			case "fish":
				return root.GenFishCompletion(env.Out, true)
			}
			return fmt.Errorf("completion: unknown shell %q; boxes completes bash, zsh and fish", args[0])
		},
	}
}

// addCompletions makes every command complete its arguments from its Use line:
// NAME is a box of boxes.yaml, HOST a host of it, a|b|c one of those words,
// FILE and DIR paths; and flags that take a box or a host complete those.
func addCompletions(root *cobra.Command, env *Env) {
	boxes := func() []string { return spec.ReadNames(env.File).Boxes }
	hosts := func() []string { return spec.ReadNames(env.File).Hosts }
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 && c.Runnable() {
			c.ValidArgsFunction = completeArgs(argWords(c.Use), boxes, hosts)
		}
		for flag, names := range map[string]func() []string{"target": boxes, "replace": boxes, "confirm-delete": boxes, "confirm": boxes, "host": hosts} {
			if c.Flags().Lookup(flag) != nil {
				_ = c.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return names(), cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// argWords are the argument placeholders of a Use line, e.g. "logs NAME
// [agent|executor]" → NAME, agent|executor.
func argWords(use string) []string {
	fields := strings.Fields(use)
	var out []string
	for _, f := range fields[1:] {
		if f == "--" {
			break
		}
		out = append(out, strings.Trim(f, "[]…."))
	}
	return out
}

func completeArgs(words []string, boxes, hosts func() []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= len(words) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		switch w := words[len(args)]; {
		case w == "NAME":
			return boxes(), cobra.ShellCompDirectiveNoFileComp
		case w == "HOST":
			return hosts(), cobra.ShellCompDirectiveNoFileComp
		case w == "FILE" || w == "PLANFILE":
			return nil, cobra.ShellCompDirectiveDefault
		case w == "DIR":
			return nil, cobra.ShellCompDirectiveFilterDirs
		case strings.Contains(w, "|"):
			return strings.Split(w, "|"), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}
