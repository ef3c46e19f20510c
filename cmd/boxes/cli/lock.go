package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/imagebuild"
	"github.com/hermes-box/boxes/spec"
)

func newLockCommand(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Change boxes.lock",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "image REF",
		Short: "Pin boxes.lock to an image the local engine already has",
		Args:  exactlyOne("lock image", "image reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lockImage(cmd, env, args[0])
		},
	})
	cmd.AddCommand(newLockUpdateCommand(env))
	return cmd
}

func lockImage(cmd *cobra.Command, env *Env, ref string) error {
	lock, err := spec.ReadLock(env.LockFile(), shown(env.LockFile()))
	if err != nil {
		return err
	}
	if lock == nil {
		lock = &spec.Lock{Version: 1}
	}
	e, err := docker.Connect(cmd.Context(), spec.Host{}, docker.Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	id, toolsErr, err := imagebuild.Pin(cmd.Context(), e, lock, ref)
	if err != nil {
		return withHint(err, "docker image ls shows what the engine has")
	}
	if toolsErr != nil {
		env.Warnf("could not read tool versions from %s: %v", ref, toolsErr)
	}
	if err := spec.WriteLock(env.LockFile(), lock); err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "boxes.lock: image %s (%s)\n", id, ref)
	return nil
}
