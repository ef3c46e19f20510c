package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/hermes-box/boxes/compose"
)

// ToolVersions runs `hb versions --json` in a throwaway container of image
// and returns tool → version for the tools it found.
func (e *Engine) ToolVersions(ctx context.Context, image string) (map[string]string, error) {
	out, err := e.runOnce(ctx, image, []string{compose.HB, "versions", "--json"})
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("hb versions --json: %w", err)
	}
	tools := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok && s != "" {
			tools[k] = s
		}
	}
	return tools, nil
}

// runOnce runs cmd in a new container of image (no network, removed after) and returns its stdout.
func (e *Engine) runOnce(ctx context.Context, image string, cmd []string) ([]byte, error) {
	created, err := e.api.ContainerCreate(ctx,
		&container.Config{Image: image, Entrypoint: cmd, Labels: map[string]string{"boxes.oneoff": "1"}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return nil, err
	}
	defer e.api.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
	if err := e.api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, err
	}
	waitC, errC := e.api.ContainerWait(ctx, created.ID, container.WaitConditionNotRunning)
	var code int64
	select {
	case w := <-waitC:
		code = w.StatusCode
	case err := <-errC:
		return nil, err
	}
	logs, err := e.api.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("%v exited %d: %s", cmd, code, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}
