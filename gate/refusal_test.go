package gate

import (
	"strings"
	"testing"
)

func TestParseRefusalsSkipsWhatIsNotOne(t *testing.T) {
	out := `{"time":"2026-01-02T03:04:05.123456789Z","destination":"example.org:443","rule":"not-allowed","reason":"example.org:443 is not a destination listed under the box's egress"}
gate: 2026/01/02 03:04:05 a line of the gate's own log
{"level":"warning","msg":"CANONICAL-PROXY-DECISION","time":"2026-01-02T03:04:05Z"}

{"time":"2026-01-02T03:04:06Z","destination":"db.internal:5432","rule":"private-range","reason":"…"}
{"time":"2026-01-02T03:04:07Z","destination":"cut.example:443","rule":"no`
	got, err := ParseRefusals(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Rule != RuleNotAllowed || got[1].Destination != "db.internal:5432" || got[0].Time.Nanosecond() != 123456789 {
		t.Errorf("refusals %+v", got)
	}
}
