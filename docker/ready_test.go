package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// listOnly answers ContainerList with its containers and ContainerInspect
// with its error; any other call panics (the embedded interface is nil).
type listOnly struct {
	client.APIClient
	containers []container.Summary
	inspect    error
}

func (l listOnly) ContainerList(context.Context, container.ListOptions) ([]container.Summary, error) {
	return l.containers, nil
}

func (l listOnly) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{}, l.inspect
}

// A box put back on containers from before the network door has no gate:
// nothing to wait for. A box with one waits for it.
func TestWaitGate(t *testing.T) {
	e := &Engine{api: listOnly{}}
	if err := e.waitGate(context.Background(), "alpha"); err != nil {
		t.Errorf("no gate: %v", err)
	}
	e = &Engine{api: listOnly{containers: []container.Summary{{ID: "g"}}, inspect: errors.New("boom")}}
	if err := e.waitGate(context.Background(), "alpha"); err == nil || !strings.Contains(err.Error(), "gate of alpha: boom") {
		t.Errorf("a gate: %v", err)
	}
}
