package cli

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/imagebuild"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// SchemaFile is where init puts the JSON Schema of boxes.yaml.
const SchemaFile = workspace.SchemaFile

const schemaHelp = `Print the JSON Schema of boxes.yaml, for editors that complete and check it.

boxes init writes it beside boxes.yaml as boxes.schema.json and names it in
boxes.yaml's first line, which yaml-language-server (VS Code's YAML extension,
Neovim's yamlls, Helix, Zed) reads:

  # yaml-language-server: $schema=./boxes.schema.json

Commit boxes.schema.json with boxes.yaml so that reviewers' editors have it
too. After upgrading boxes, refresh it (boxes validate warns when it differs):

  boxes schema > boxes.schema.json

For a boxes.yaml written before, add the line above at its top, or map the
schema to the file in the editor's settings ("yaml.schemas" in VS Code).`

// plural is "1 box", "2 boxes".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// validation is what validate --json prints.
type validation struct {
	File     string   `json:"file"`
	Boxes    []string `json:"boxes"`
	Hosts    []string `json:"hosts"`
	Lock     string   `json:"lock"` // "ok", "missing" or "no-image"
	Image    string   `json:"image,omitempty"`
	Warnings []string `json:"warnings"`
}

func newValidateCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check boxes.yaml and boxes.lock, offline",
		Long: `Check boxes.yaml and boxes.lock, offline. Errors name file:line:col with a
hint and exit 1; warnings (no lock, no image, an image built from other
inputs, a stale boxes.schema.json) go to stderr and exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runValidate(env, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON (errors still go to stderr, exit 1)")
	return cmd
}

func runValidate(env *Env, asJSON bool) error {
	ws, err := openWorkspace(env, docker.Options{})
	if err != nil {
		return err
	}
	defer ws.Close()
	cfg, lock := ws.Config, ws.Lock
	v := validation{File: filepath.Base(env.File), Boxes: []string{}, Hosts: []string{}, Warnings: []string{}}
	for _, b := range cfg.Boxes {
		v.Boxes = append(v.Boxes, b.Name)
	}
	for name := range cfg.Hosts {
		v.Hosts = append(v.Hosts, name)
	}
	sort.Strings(v.Hosts)
	type warning struct{ text, hint string }
	var warnings []warning
	switch {
	case lock == nil:
		v.Lock = "missing"
		warnings = append(warnings, warning{"boxes.lock not found; plan will need it", "boxes lock update, then boxes build (or boxes lock image REF for an image the engine has)"})
	case lock.Image == nil:
		v.Lock = "no-image"
		warnings = append(warnings, warning{"boxes.lock has pins but no image; plan will need one", "boxes build makes it (or boxes lock image REF pins one the engine has)"})
	default:
		v.Lock, v.Image = "ok", lock.Image.ID
		if inputs, ok := imagebuild.CurrentInputs(lock); ok && lock.Image.Inputs != "" && lock.Image.Inputs != inputs {
			warnings = append(warnings, warning{"boxes.lock: image.inputs is not the digest of this recipe and these pins: the image was built from other inputs", "boxes build makes the image of the current pins"})
		}
	}
	schema, err := os.ReadFile(filepath.Join(env.Dir(), SchemaFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !bytes.Equal(schema, spec.Schema()):
		warnings = append(warnings, warning{SchemaFile + " is not this boxes's schema of boxes.yaml", "boxes schema > " + SchemaFile})
	}
	for _, w := range warnings {
		v.Warnings = append(v.Warnings, w.text)
	}
	if asJSON {
		return printJSON(env, v)
	}
	fmt.Fprintf(env.Out, "%s: %s OK\n", v.File, plural(len(v.Boxes), "box", "boxes"))
	if v.Lock == "ok" {
		fmt.Fprintf(env.Out, "boxes.lock: image %s OK\n", v.Image)
	}
	for _, w := range warnings {
		env.Warnf("%s", w.text)
		fmt.Fprintf(env.Err, "boxes: hint: %s\n", w.hint)
	}
	return nil
}
