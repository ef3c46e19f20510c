package docker

import (
	"context"
	"fmt"
	"io"
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
