package docker

import (
	"context"
	"fmt"
	"io"
)

// SaveImage streams image ref out of the engine (image save), for another
// engine's LoadImage, with the image ID ref has here. Close the stream.
func (e *Engine) SaveImage(ctx context.Context, ref string) (string, io.ReadCloser, error) {
	id, err := e.ImageID(ctx, ref)
	if err != nil {
		return "", nil, fmt.Errorf("streaming %s from %s: %w", ref, hostLabel(e.Host), err)
	}
	r, err := e.api.ImageSave(ctx, []string{ref})
	if err != nil {
		return "", nil, fmt.Errorf("saving %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	return id, r, nil
}

// LoadImage loads r, another engine's image save of ref, whose image ID
// there is id, and checks that this engine then has ref with the same
// image ID: an image copied without a registry. It returns the bytes read.
func (e *Engine) LoadImage(ctx context.Context, ref, id string, r io.Reader) (int64, error) {
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
	if got != id {
		return counted.n, fmt.Errorf("after loading %s on %s: image ID %s, want %s", ref, hostLabel(e.Host), got, id)
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
