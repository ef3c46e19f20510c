package docker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// sweepAPI lists its containers, minding the label and status filters, and
// records the removals.
type sweepAPI struct {
	listOnly
	removed []string
}

func (s *sweepAPI) ContainerList(_ context.Context, o container.ListOptions) ([]container.Summary, error) {
	var out []container.Summary
	for _, c := range s.containers {
		labelled := true
		for _, key := range o.Filters.Get("label") {
			_, has := c.Labels[key]
			labelled = labelled && has
		}
		if labelled && o.Filters.ExactMatch("status", c.State) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *sweepAPI) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	s.removed = append(s.removed, id)
	return nil
}

// A throwaway container a killed boxes created and never started is
// removed by the next run once it is older than any run takes; one just
// made, one that runs, a room measure (swept by its own rule) and another
// program's container are left.
func TestStaleOneOffsSwept(t *testing.T) {
	old, now := time.Now().Add(-staleMeasure-time.Minute).Unix(), time.Now().Unix()
	one := map[string]string{oneOffLabel: "1"}
	api := &sweepAPI{listOnly: listOnly{containers: []container.Summary{
		{ID: "left", State: "created", Created: old, Labels: one},
		{ID: "fresh", State: "created", Created: now, Labels: one},
		{ID: "running", State: "running", Created: old, Labels: one},
		{ID: "room", State: "created", Created: old, Labels: map[string]string{oneOffLabel: "1", roomLabel: "alpha"}},
		{ID: "theirs", State: "created", Created: old, Labels: map[string]string{"other": "1"}},
	}}}
	e := &Engine{api: api}
	e.removeStaleOneOffs(context.Background())
	if !slices.Equal(api.removed, []string{"left"}) {
		t.Errorf("removed %v, want [left]", api.removed)
	}
}
