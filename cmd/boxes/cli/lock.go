package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/image/build"
	"github.com/hermes-box/boxes/spec"
)

func newLockCommand(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Change boxes.lock",
		Long: `Change boxes.lock, the machine-written file beside boxes.yaml that pins the
image boxes run and the tool versions it is built from: lock update
resolves newer pins (network), lock image pins an image an engine already
has. boxes build builds the image of the pins and locks it.`,
	}
	var push string
	image := &cobra.Command{
		Use:   "image REF",
		Short: "Pin boxes.lock to an image the local engine already has",
		Long: `Pin boxes.lock's image to REF, an image the local engine already has (a tag,
an ID, or NAME@sha256:… for one hosts can pull by digest): its ID and the
tool versions read from inside it. The pins are left as they are. A
boxes.yaml that validate refuses is refused here too.

Hosts that lack the image get it streamed from an engine that has it, or
pulled when the lock's ref is a registry reference pinned by digest: REF
given as NAME@sha256:…, or --push REPO, which pushes the image there with
the credentials of this machine's docker configuration and records the
pushed digest.

  boxes lock image hermes-box-lite:test`,
		Args: exactlyOne("lock image", "image reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lockImage(cmd, env, args[0], push)
		},
	}
	image.Flags().StringVar(&push, "push", "", pushUsage)
	cmd.AddCommand(image)
	cmd.AddCommand(newLockUpdateCommand(env))
	return cmd
}

// pushUsage is build's and lock image's --push.
const pushUsage = "push the image to REPO (NAME or NAME:TAG, the tag defaulting to the image's) with this machine's docker credentials, and record REPO@DIGEST as boxes.lock's image ref, which hosts that lack the image pull"

func lockImage(cmd *cobra.Command, env *Env, ref, push string) error {
	// The lock is pinned for a boxes.yaml that validates: what validate
	// refuses is refused here too, before any engine is asked. A directory
	// with no boxes.yaml yet may still get its lock first.
	if err := validConfig(env.File); err != nil {
		return err
	}
	img, toolsErr, err := build.PinLock(cmd.Context(), env.LockFile(), shown(env.LockFile()), ref, push)
	if err != nil {
		return err
	}
	if toolsErr != nil {
		env.Warnf("could not read tool versions from %s: %v", ref, toolsErr)
	}
	if push != "" {
		fmt.Fprintf(env.Out, "boxes.lock: image %s (%s), pushed as %s: hosts that lack the image pull it\n", img.ID, ref, img.Ref)
		return nil
	}
	fmt.Fprintf(env.Out, "boxes.lock: image %s (%s)\n", img.ID, ref)
	return nil
}

// validConfig parses the boxes.yaml at file as validate does, and nothing
// else: a missing one is no error.
func validConfig(file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = spec.Parse(shown(abs), data)
	return err
}
