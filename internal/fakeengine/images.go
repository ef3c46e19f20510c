package fakeengine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// SaveImage would stream an image out of the engine.
func (e *Engine) SaveImage(_ context.Context, ref string) (string, io.ReadCloser, error) {
	return "", nil, fmt.Errorf("saving image %s: %w", ref, ErrNotSupported)
}

// LoadImage would load another engine's image.
func (e *Engine) LoadImage(_ context.Context, ref, _ string, _ io.Reader) (int64, error) {
	return 0, fmt.Errorf("loading image %s: %w", ref, ErrNotSupported)
}

// PullImage would pull an image from a registry.
func (e *Engine) PullImage(_ context.Context, ref, _ string) error {
	return fmt.Errorf("pulling image %s: %w", ref, ErrNotSupported)
}

// CreateLeaseMark makes lease marker m as a container never started, as
// docker.Engine.CreateLeaseMark does: a name taken is refused. The claim
// of a box with a rival (SetRival) finds the rival's made just before.
func (e *Engine) CreateLeaseMark(_ context.Context, image string, m engine.LeaseMark) (string, error) {
	var id string
	err := e.edit("CreateLeaseMark", func(h *Host) error {
		if holder, ok := h.Rivals[m.Box]; ok && m.Kind == engine.LeaseClaim {
			delete(h.Rivals, m.Box)
			rival := m
			rival.Holder, rival.Lease, rival.Expires = holder, "rival-"+m.Box, time.Now().Add(time.Hour).UTC().Truncate(time.Second)
			// Docker takes a name before it lists the container, once its
			// layer is made: the loser's next look may miss the winner.
			h.Containers = append(h.Containers, &Container{ID: h.newID(e.host), Name: m.Name, Image: image, Labels: compose.LeaseLabels(rival),
				State: "created", Networks: map[string]string{}, Unlisted: 1})
		}
		if _, taken := h.container(m.Name); taken != nil {
			return fmt.Errorf("%s: %w", m.Name, engine.ErrLeaseTaken)
		}
		id = h.newID(e.host)
		h.Containers = append(h.Containers, &Container{ID: id, Name: m.Name, Image: image, Labels: compose.LeaseLabels(m),
			State: "created", Networks: map[string]string{}})
		return nil
	})
	return id, err
}
