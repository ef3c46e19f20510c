package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/pkg/jsonmessage"
)

// BuildOptions is one image build.
type BuildOptions struct {
	Context    *BuildContext
	Dockerfile string // path inside the context
	Tag        string
	Args       map[string]string
	NoCache    bool
	// Line receives every line the builder prints, in order; nil discards them.
	Line func(string)
}

// BuildResult is what a build made.
type BuildResult struct {
	ID     string // sha256:…
	Steps  int    // Dockerfile instructions run
	Cached int    // of which the builder took from its cache
}

var stepLine = regexp.MustCompile(`^Step \d+/\d+ : `)

// Build builds an image with the engine's classic builder, the one every
// engine has, and tags it. A failed step is an error carrying the builder's
// message; the lines before it went to opts.Line.
func (e *Engine) Build(ctx context.Context, opts BuildOptions) (BuildResult, error) {
	tarball, err := opts.Context.Tar()
	if err != nil {
		return BuildResult{}, fmt.Errorf("build context: %w", err)
	}
	args := make(map[string]*string, len(opts.Args))
	for k, v := range opts.Args {
		args[k] = &v
	}
	resp, err := e.api.ImageBuild(ctx, bytes.NewReader(tarball), build.ImageBuildOptions{
		Tags:        []string{opts.Tag},
		Dockerfile:  opts.Dockerfile,
		BuildArgs:   args,
		NoCache:     opts.NoCache,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return BuildResult{}, fmt.Errorf("starting the build: %w", err)
	}
	defer resp.Body.Close()
	res, err := readBuildStream(resp.Body, opts.Line)
	if err != nil {
		return res, err
	}
	if res.ID == "" {
		// Engines that send no aux message with the ID: ask for the tag.
		if res.ID, err = e.ImageID(ctx, opts.Tag); err != nil {
			return res, fmt.Errorf("the build finished but %w", err)
		}
	}
	return res, nil
}

// readBuildStream follows the builder's JSON message stream to its end.
func readBuildStream(r io.Reader, line func(string)) (BuildResult, error) {
	var res BuildResult
	var partial string // stream chunks need not end at a line break
	emit := func(s string) {
		s = strings.TrimRight(s, "\r")
		if stepLine.MatchString(s) {
			res.Steps++
		} else if strings.TrimSpace(s) == "---> Using cache" {
			res.Cached++
		}
		if line != nil {
			line(s)
		}
	}
	dec := json.NewDecoder(r)
	for {
		var msg jsonmessage.JSONMessage
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return res, fmt.Errorf("reading the build output: %w", err)
		}
		if msg.Error != nil {
			return res, fmt.Errorf("build failed: %s", strings.TrimSpace(msg.Error.Message))
		}
		if msg.Aux != nil {
			var aux build.Result
			if err := json.Unmarshal(*msg.Aux, &aux); err == nil && aux.ID != "" {
				res.ID = aux.ID
			}
		}
		text := partial + msg.Stream
		if msg.Stream == "" && msg.Status != "" && msg.Progress == nil {
			// Pull messages for a FROM image the engine lacks, without
			// their progress bars.
			text = partial + msg.Status + "\n"
		}
		lines := strings.Split(text, "\n")
		partial = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			emit(l)
		}
	}
	if partial != "" {
		emit(partial)
	}
	return res, nil
}
