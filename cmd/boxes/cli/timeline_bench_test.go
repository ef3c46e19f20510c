package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/spec"
)

// BenchmarkApplyTimeline: where one new box's apply spends its time. It
// applies one box with every Docker API request timed (docker.Options.Trace)
// and every progress line stamped, then makes the same box with the raw API
// (rawFullBox) with its requests counted; it logs both timelines (go test
// -v) and reports the apply's requests against the raw API's. With
// -cpuprofile the profile is of the apply in this process.
func BenchmarkApplyTimeline(b *testing.B) {
	image := benchImage(b)
	names := benchNames(1)
	cleanBench(b, names...)
	f := newBenchFleet(b, image)
	f.declare("", names, nil)
	ctx := context.Background()
	var applyCalls, rawCalls []float64
	var applyTook, rawTook []time.Duration
	for i := 0; i < b.N; i++ {
		tl := &timeline{}
		c := cli.DefaultConnectors()
		c[spec.HostDocker] = func() engine.Connector {
			return docker.Connector{Options: docker.Options{CountCalls: true, Trace: tl.call}}
		}
		tl.start = time.Now()
		code := cli.MainWith(ctx, cli.Streams{In: strings.NewReader(""), Out: tl, Err: tl}, []string{"-f", f.file(), "apply", "--auto-approve"}, c)
		took := time.Since(tl.start)
		if code != 0 {
			b.Fatalf("boxes apply: exit %d\n%s", code, tl.text())
		}
		applyTook = append(applyTook, took)
		applyCalls = append(applyCalls, float64(tl.count()))
		b.Logf("boxes apply, 1 new box: %s, %d API requests\n%s", took.Round(time.Millisecond), tl.count(), tl.text())
		removeBench(names...)

		raw := &timeline{}
		e, err := docker.Connect(ctx, spec.Host{}, docker.Options{CountCalls: true, Trace: raw.call})
		if err != nil {
			b.Fatal(err)
		}
		projects := f.projects(e.Client(), image, names)
		raw.start = time.Now()
		err = rawBoxesOf(ctx, e.Client(), projects, rawToken, 1)
		took = time.Since(raw.start)
		e.Close()
		if err != nil {
			b.Fatal(err)
		}
		rawTook = append(rawTook, took)
		rawCalls = append(rawCalls, float64(raw.count()))
		b.Logf("raw engine API, the same box: %s, %d API requests\n%s", took.Round(time.Millisecond), raw.count(), raw.text())
		removeBench(names...)
	}
	benchtable.Report(b, benchtable.Row{Figure: "boxes apply, 1 new box: Docker API requests", Value: slices.Max(applyCalls), Unit: "calls",
		Baseline: "raw engine API, the same box to the same readiness", Base: slices.Max(rawCalls)})
	benchtable.Report(b, benchtable.Row{Figure: "boxes apply, 1 new box, traced", Value: seconds(median(applyTook)), Unit: "s",
		Baseline: "raw engine API, the same box, traced", Base: seconds(median(rawTook))})
}

// timeline records API requests and progress lines, stamped from start.
type timeline struct {
	mu     sync.Mutex
	start  time.Time
	events []event
	buf    []byte
}

type event struct {
	at, took time.Duration
	what     string
	request  bool
}

var longID = regexp.MustCompile(`[0-9a-f]{64}`)

func (t *timeline) call(c docker.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	what := c.Method + " " + longID.ReplaceAllStringFunc(c.Path, func(id string) string { return id[:8] })
	if c.Err != nil {
		what += " (" + c.Err.Error() + ")"
	}
	t.events = append(t.events, event{at: c.Start.Sub(t.start), took: c.Took, what: what, request: true})
}

// Write stamps each progress line as it comes.
func (t *timeline) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(t.buf[:i])); line != "" {
			t.events = append(t.events, event{at: time.Since(t.start), what: "progress: " + line})
		}
		t.buf = t.buf[i+1:]
	}
	return len(p), nil
}

func (t *timeline) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.events {
		if e.request {
			n++
		}
	}
	return n
}

// text is the timeline, one event a line: its start and duration in ms.
func (t *timeline) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := slices.Clone(t.events)
	slices.SortStableFunc(ev, func(a, b event) int { return int(a.at - b.at) })
	var sb strings.Builder
	for _, e := range ev {
		if e.request {
			fmt.Fprintf(&sb, "%7.1f %+7.1f  %s\n", ms(e.at), ms(e.took), e.what)
		} else {
			fmt.Fprintf(&sb, "%7.1f %8s  %s\n", ms(e.at), "", e.what)
		}
	}
	return sb.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
