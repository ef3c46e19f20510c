package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	// Named for what it keeps: the cli tests have a gate of their own.
	egress "github.com/hermes-box/boxes/gate"
)

// newGateCommand is the process of a box's gate container, not a command
// for people: hidden from help.
func newGateCommand(env *Env) *cobra.Command {
	var health bool
	cmd := &cobra.Command{
		Use:    "gate",
		Short:  "Run a box's egress gate (inside its gate container)",
		Hidden: true,
		Long: fmt.Sprintf(`Run a box's egress gate: the forward proxy the agent's HTTP_PROXY and
HTTPS_PROXY name (port %d) and the credential routes (port %d), with the
rules that boxes passes as JSON in %s. Each refusal is printed to
standard output as one JSON line.

boxes starts it in the box's gate container; it is not run by hand.
--health checks that the gate of this container answers, for the
container's health check.`, egress.ProxyPort, egress.RoutePort, egress.ConfigVar),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if health {
				return egress.CheckHealth(cmd.Context())
			}
			raw := os.Getenv(egress.ConfigVar)
			if raw == "" {
				return fmt.Errorf("%s is not set: boxes gate runs in a box's gate container, which boxes starts", egress.ConfigVar)
			}
			cfg, err := egress.ParseConfig([]byte(raw))
			if err != nil {
				return fmt.Errorf("%s: %w", egress.ConfigVar, err)
			}
			return egress.Run(cmd.Context(), cfg, env.Out)
		},
	}
	cmd.Flags().BoolVar(&health, "health", false, "exit 0 when the gate of this container answers")
	return cmd
}
