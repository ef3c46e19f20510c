package gate

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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

// The destination a request names is logged as the request named it, format
// verbs and all, whichever way the gate refused it: by its rules, or as a
// name that cannot be one. (Percent-escapes in a URI's host are read once,
// as Go's server reads them: %25 is the %.)
func TestRefusalsKeepTheDestinationAsSent(t *testing.T) {
	g := start(t, Config{Egress: EgressList, Allow: []Rule{{Host: "ok.example"}}})
	for _, c := range []struct{ request, dest, rule string }{
		{"GET http://evil%252eexample%25d%25s:8080/ HTTP/1.1\r\nHost: x\r\n", "evil%2eexample%d%s:8080", RuleNotAllowed},
		{"CONNECT evil%25v%25x%25%25:443 HTTP/1.1\r\nHost: x\r\n", "evil%v%x%%:443", RuleNotAllowed},
		{"GET http://evil%C2%9B31m.example/ HTTP/1.1\r\nHost: x\r\n", "evil\u009b31m.example", RuleNotAllowed},
		{"CONNECT 198.51.100.7:8080 HTTP/1.1\r\nHost: x\r\n", "198.51.100.7:8080", RuleNotAllowed},
	} {
		conn, err := net.Dial("tcp", g.proxy)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(conn, c.request+"Connection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
			t.Fatalf("%q: %v %v, want a refusal", c.request, resp, err)
		}
		got := g.lastRefusal(c.dest, c.rule)
		if strings.Contains(got.Reason, "%!") || strings.Contains(got.Reason, "e+00") {
			t.Errorf("%q: the reason went through a format: %q", c.request, got.Reason)
		}
	}
}
