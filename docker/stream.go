package docker

import (
	"context"
	"fmt"
	"io"

	dockerimage "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"
)

// StreamImage copies image ref from src to e without a registry: src's
// image save into e's image load, and checks that e then has ref with the
// same image ID. It returns the bytes streamed.
func (e *Engine) StreamImage(ctx context.Context, src *Engine, ref string) (int64, error) {
	want, err := src.ImageID(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("streaming %s from %s: %w", ref, hostLabel(src.Host), err)
	}
	r, err := src.api.ImageSave(ctx, []string{ref})
	if err != nil {
		return 0, fmt.Errorf("saving %s on %s: %w", ref, hostLabel(src.Host), err)
	}
	defer r.Close()
	counted := &countingReader{r: r}
	resp, err := e.api.ImageLoad(ctx, counted)
	if err != nil {
		return counted.n, fmt.Errorf("loading %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return counted.n, fmt.Errorf("loading %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	got, err := e.ImageID(ctx, ref)
	if err != nil {
		return counted.n, fmt.Errorf("after loading %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	if got != want {
		return counted.n, fmt.Errorf("after loading %s on %s: image ID %s, want %s", ref, hostLabel(e.Host), got, want)
	}
	return counted.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// PullImage pulls ref, a registry reference pinned by digest, with the
// engine's own registry access, and checks that ref is then image.
func (e *Engine) PullImage(ctx context.Context, ref, image string) error {
	r, err := e.api.ImagePull(ctx, ref, dockerimage.PullOptions{})
	if err != nil {
		return fmt.Errorf("pulling %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	defer r.Close()
	// The pull reports its failures in its stream of progress messages.
	if err := jsonmessage.DisplayJSONMessagesStream(r, io.Discard, 0, false, nil); err != nil {
		return fmt.Errorf("pulling %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	got, err := e.ImageID(ctx, ref)
	if err != nil {
		return fmt.Errorf("after pulling %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	if got != image {
		return fmt.Errorf("after pulling %s on %s: image ID %s, want %s", ref, hostLabel(e.Host), got, image)
	}
	return nil
}
