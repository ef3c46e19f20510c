package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
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

// BenchmarkApplyTimeline: where a new box's apply spends its time, for 1
// box and for 10 (--parallelism 4). It applies with every Docker API
// request timed (docker.Options.Trace) and every progress line stamped,
// then makes the same boxes with the raw API (rawFullBox) with its
// requests timed; it logs both timelines and their requests summed by kind
// (go test -v), and reports the apply's requests against the raw API's.
// With -cpuprofile the profile is of the applies in this process.
func BenchmarkApplyTimeline(b *testing.B) {
	image := benchImage(b)
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchTimeline(b, image, n) })
	}
}

func benchTimeline(b *testing.B, image string, n int) {
	names := benchNames(n)
	cleanBench(b, names...)
	f := newBenchFleet(b, image)
	f.declare("", names, nil)
	ctx := context.Background()
	parallel := min(n, benchParallelism)
	var applyCalls, rawCalls []float64
	var applyTook, rawTook []time.Duration
	for i := 0; i < b.N; i++ {
		tl := &timeline{}
		c := cli.DefaultConnectors()
		c[spec.HostDocker] = func() engine.Connector {
			return docker.Connector{Options: docker.Options{CountCalls: true, Trace: tl.call}}
		}
		tl.start = time.Now()
		code := cli.MainWith(ctx, cli.Streams{In: strings.NewReader(""), Out: tl, Err: tl},
			[]string{"-f", f.file(), "apply", "--auto-approve", "--parallelism", fmt.Sprint(parallel)}, c)
		took := time.Since(tl.start)
		if code != 0 {
			b.Fatalf("boxes apply: exit %d\n%s", code, tl.text())
		}
		applyTook = append(applyTook, took)
		applyCalls = append(applyCalls, float64(tl.count()))
		b.Logf("boxes apply, %d new boxes: %s, %d API requests\n%s\n%s", n, took.Round(time.Millisecond), tl.count(), tl.text(), tl.summary())
		removeBench(names...)

		raw := &timeline{}
		e, err := docker.Connect(ctx, spec.Host{}, docker.Options{CountCalls: true, Trace: raw.call})
		if err != nil {
			b.Fatal(err)
		}
		projects := f.projects(e.Client(), image, names)
		raw.reset()
		err = rawBoxesOf(ctx, e.Client(), projects, rawToken, parallel)
		took = time.Since(raw.start)
		e.Close()
		if err != nil {
			b.Fatal(err)
		}
		rawTook = append(rawTook, took)
		rawCalls = append(rawCalls, float64(raw.count()))
		b.Logf("raw engine API, the same %d boxes: %s, %d API requests\n%s\n%s", n, took.Round(time.Millisecond), raw.count(), raw.text(), raw.summary())
		removeBench(names...)
	}
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes apply, %d new boxes: Docker API requests", n), Value: slices.Max(applyCalls), Unit: "calls",
		Baseline: "raw engine API, the same boxes to the same readiness", Base: slices.Max(rawCalls)})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes apply, %d new boxes, traced", n), Value: seconds(median(applyTook)), Unit: "s",
		Baseline: "raw engine API, the same boxes, traced", Base: seconds(median(rawTook))})
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

// reset forgets what was recorded and starts the clock again.
func (t *timeline) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events, t.start = nil, time.Now()
}

// namePart is a path element naming one object: an ID or a box's name.
var namePart = regexp.MustCompile(`^([0-9a-f]{8}|hbl-.*)$`)

// summary sums the requests by kind (method and path, names left out):
// how many, and their time.
func (t *timeline) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	type sum struct {
		n    int
		took time.Duration
	}
	by := map[string]*sum{}
	for _, e := range t.events {
		if !e.request {
			continue
		}
		method, path, _ := strings.Cut(e.what, " ")
		path, _, _ = strings.Cut(path, " (")
		parts := strings.Split(path, "/")
		for i, p := range parts {
			if namePart.MatchString(p) {
				parts[i] = "*"
			}
		}
		k := method + " " + strings.Join(parts, "/")
		if by[k] == nil {
			by[k] = &sum{}
		}
		by[k].n++
		by[k].took += e.took
	}
	keys := slices.Sorted(maps.Keys(by))
	slices.SortStableFunc(keys, func(a, b string) int { return int(by[b].took - by[a].took) })
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%4d× %8.1f ms  %s\n", by[k].n, ms(by[k].took), k)
	}
	return sb.String()
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
