package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// duRunner answers du in each container as its table says.
type duRunner map[string]struct {
	out, errOut string
	code        int
	err         error
}

func (r duRunner) Run(ctx context.Context, id, user string, cmd []string, stdout, stderr io.Writer) (int, error) {
	if user != "0" || strings.Join(cmd[:2], " ") != "du -sxk" {
		return 0, fmt.Errorf("ran %q as %q", cmd, user)
	}
	a := r[id]
	io.WriteString(stdout, a.out)
	io.WriteString(stderr, a.errOut)
	return a.code, a.err
}

// Each volume is measured in the running container that mounts it; one
// unreadable there is what stand knows of it, else why it is unread.
func TestSizeVolumes(t *testing.T) {
	o := &Observed{Containers: []Container{
		{ID: "agent", State: Running, Mounts: []Mount{{Volume: "data", Destination: "/data"}}},
		{ID: "exec", State: Running, Mounts: []Mount{{Volume: "exec", Destination: "/home"}}},
		{ID: "odd", State: Running, Mounts: []Mount{{Volume: "odd", Destination: "/odd"}, {Volume: "known", Destination: "/known"}}},
		{ID: "stopped", State: Exited, Mounts: []Mount{{Volume: "cold", Destination: "/data"}}},
	}}
	r := duRunner{
		"agent": {out: "1024\t/data\n"},
		"exec":  {out: "8\t/home\n", errOut: "du: cannot read directory '/home/x': Permission denied", code: 1},
		"odd":   {errOut: "du: no such file", code: 1},
	}
	stand := func(ctx context.Context, id, dir string) (VolumeSize, bool) {
		return VolumeSize{Bytes: 77}, dir == "/known"
	}
	got := SizeVolumes(context.Background(), r, o, []string{"data", "exec", "odd", "known", "cold", "nowhere"}, stand)
	want := map[string]VolumeSize{
		"data":    {Bytes: 1 << 20},
		"exec":    {Bytes: 8 << 10}, // du's total stands, its complaint aside
		"odd":     {Unread: "du: no such file"},
		"known":   {Bytes: 77},
		"cold":    {Unread: "the box is not running"},
		"nowhere": {Unread: "no container mounts it"},
	}
	for v, w := range want {
		if got[v] != w {
			t.Errorf("%s: %+v, want %+v", v, got[v], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d sizes, want %d", len(got), len(want))
	}
}
