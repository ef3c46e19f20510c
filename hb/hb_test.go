package hb

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/image"
)

// The names here are guest/hb's: a rename on one side must fail here.
func TestNamesMatchGuestHB(t *testing.T) {
	src, err := fs.ReadFile(image.Recipe, "guest/hb")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^readonly ([A-Z_]+)=(\S+)$`).FindAllStringSubmatch(string(src), -1) {
		v := m[2]
		for k, val := range vars {
			v = strings.ReplaceAll(v, "$"+k, val)
		}
		vars[m[1]] = v
	}
	for name, want := range map[string]string{
		"DATA":     Data,
		"QUIESCED": "/" + QuiescedMarker,
		"AGENT":    AgentUser,
	} {
		if vars[name] != want {
			t.Errorf("guest/hb %s=%q, boxes has %q", name, vars[name], want)
		}
	}
	for _, cmd := range []string{"quiesce", "resume", "doctor", "health"} {
		if !regexp.MustCompile(`(?m)^\s*` + cmd + `\) cmd_`).MatchString(string(src)) {
			t.Errorf("guest/hb has no %s command", cmd)
		}
	}
	if !strings.Contains(string(src), "\t"+AgentService+")\n\t\t[ -f \"$READY\" ]") {
		t.Errorf("guest/hb health has no %s case checking init's ready file", AgentService)
	}
	if !strings.Contains(string(src), "--json") {
		t.Error("guest/hb doctor has no --json")
	}
	if vars["AGENT_HOME"] != "/"+AgentHome {
		t.Errorf("guest/hb AGENT_HOME=%q, boxes has /%s", vars["AGENT_HOME"], AgentHome)
	}
	prov, err := fs.ReadFile(image.Recipe, "provision/provision.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prov), fmt.Sprintf("\nreadonly AGENT_UID=%d\n", AgentUID)) {
		t.Errorf("provision.sh does not make agent's uid %d", AgentUID)
	}
}

// fakeRunner answers hb commands from a script of exit codes.
type fakeRunner struct {
	calls  []string
	health []int // exit codes of successive hb health runs
	stdout string
	code   int
}

func (f *fakeRunner) Run(_ context.Context, id, user string, cmd []string, stdout, stderr io.Writer) (int, error) {
	f.calls = append(f.calls, user+" "+strings.Join(cmd, " "))
	if cmd[1] == "health" {
		if len(f.health) == 0 {
			return 0, nil
		}
		c := f.health[0]
		f.health = f.health[1:]
		fmt.Fprint(stderr, "hb init has not finished")
		return c, nil
	}
	fmt.Fprint(stdout, f.stdout)
	return f.code, nil
}

func TestQuiesceAndResumeRunAsRoot(t *testing.T) {
	r := &fakeRunner{}
	if err := Quiesce(context.Background(), r, "c1"); err != nil {
		t.Fatal(err)
	}
	if err := Resume(context.Background(), r, "c1"); err != nil {
		t.Fatal(err)
	}
	want := "root " + Path + " quiesce|root " + Path + " resume"
	if got := strings.Join(r.calls, "|"); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	r.code = 3
	if err := Quiesce(context.Background(), r, "c1"); err == nil || !strings.Contains(err.Error(), "exited 3") {
		t.Errorf("a failing quiesce gave %v", err)
	}
}

func TestWaitInitTellsOnceAndTimesOut(t *testing.T) {
	r := &fakeRunner{health: []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}
	told := 0
	err := WaitInit(context.Background(), r, "alpha", "c1", Wait{Timeout: 1200 * time.Millisecond, Poll: 100 * time.Millisecond, Waiting: func() { told++ }})
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "hb init has not finished") {
		t.Fatalf("got %v", err)
	}
	if told != 1 {
		t.Errorf("Waiting called %d times, want 1", told)
	}
	r = &fakeRunner{health: []int{1, 0}}
	if err := WaitInit(context.Background(), r, "alpha", "c1", Wait{Timeout: time.Second, Poll: time.Millisecond}); err != nil {
		t.Errorf("init that finishes gave %v", err)
	}
}

func TestDoctorTakesTheInBoxChecks(t *testing.T) {
	r := &fakeRunner{stdout: `{"ok":false,"checks":[{"name":"layout","ok":false,"severity":"error","detail":"x"}]}`, code: 1}
	got := Doctor(context.Background(), r, "c1")
	if len(got) != 1 || got[0].Where != "box" || got[0].Name != "layout" || got[0].OK {
		t.Errorf("got %+v", got)
	}
	r = &fakeRunner{stdout: `{"ok":true,"checks":[{"name":"layout","ok":true,"severity":"ok"}]}`, code: 1}
	got = Doctor(context.Background(), r, "c1")
	if len(got) != 2 || got[1].Name != "hb doctor" || got[1].OK {
		t.Errorf("an exit code that disagrees gave %+v", got)
	}
	r = &fakeRunner{stdout: "garbage", code: 2}
	if got := Doctor(context.Background(), r, "c1"); len(got) != 1 || got[0].OK {
		t.Errorf("no report gave %+v", got)
	}
}

func TestWriteMarker(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := WriteMarker(tw, "boxes load"); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	tr := tar.NewReader(&buf)
	var names []string
	var stamp []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		stamp, _ = io.ReadAll(tr)
	}
	if strings.Join(names, " ") != "data/.hb/ "+QuiescedMarker || !bytes.HasSuffix(stamp, []byte(" boxes load\n")) {
		t.Errorf("marker entries %q, stamp %q", names, stamp)
	}
}

// enter attaches to the agent's session, making it when the box has none,
// from the agent's home.
func TestAttach(t *testing.T) {
	got := strings.Join(Attach(), " ")
	if !strings.HasSuffix(got, " sh tmux new-session -A -s main") || !strings.HasPrefix(got, "sh -c ") {
		t.Errorf("Attach() = %q", got)
	}
}
