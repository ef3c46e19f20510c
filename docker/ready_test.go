package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
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

// Started at once: no service waits for another, whatever the project's
// order of creation, and the project itself is left as it was.
func TestAtOnce(t *testing.T) {
	p := &types.Project{Name: "hbl-a", Services: types.Services{
		"agent":    {Name: "agent", DependsOn: types.DependsOnConfig{"executor": {Condition: types.ServiceConditionStarted, Required: true}}},
		"executor": {Name: "executor"},
	}}
	q := atOnce(p)
	for name, s := range q.Services {
		if len(s.DependsOn) != 0 {
			t.Errorf("%s still depends on %v", name, s.DependsOn)
		}
	}
	if len(q.Services) != 2 || q.Name != "hbl-a" || len(p.Services["agent"].DependsOn) != 1 {
		t.Errorf("atOnce(%+v) = %+v", p, q)
	}
}

// A readiness wait looks again soon at first, then five times a second.
func TestPollAfter(t *testing.T) {
	want := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}
	var sum time.Duration
	for try, w := range want {
		if got := PollAfter(try); got != w {
			t.Errorf("PollAfter(%d) = %s, want %s", try, got, w)
		}
		sum += PollAfter(try)
	}
	if PollAfter(1000) != 200*time.Millisecond {
		t.Errorf("PollAfter(1000) = %s", PollAfter(1000))
	}
	if sum != 775*time.Millisecond {
		t.Errorf("six looks sleep %s in all", sum)
	}
}
