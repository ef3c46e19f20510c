package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// executorSide is the executor's side of a gate serving on loopback for
// one test, beside the agent's side of the same Config.
type executorSide struct {
	*running
	relay string // host:port of the relay of the published port
}

// startExecutor serves cfg's executor side on 127.0.0.1, taking proxy
// connections from the addresses in from only.
func startExecutor(t *testing.T, cfg Config, from netip.Prefix) *executorSide {
	t.Helper()
	if cfg.resolver == nil {
		cfg.resolver = dns(nil)
	}
	g := &running{t: t, refusals: &lockedBuffer{}, logs: &lockedBuffer{}}
	cfg.logs = g.logs
	proxyLn := listen(t)
	relayLn := listen(t)
	g.proxy = proxyLn.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeExecutor(ctx, cfg, proxyLn, relayLn, from, g.refusals) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeExecutor: %v", err)
		}
	})
	return &executorSide{running: g, relay: relayLn.Addr().String()}
}

var loopbackNet = netip.MustParsePrefix("127.0.0.0/8")

// The executor's side enforces its own rules, which may be broader than
// the agent's: the same request is allowed on one side and refused on the
// other, and each side's refusal says whose rule refused it.
func TestExecutorSideHasItsOwnRules(t *testing.T) {
	srv := newHello(t)
	p := srv.port()
	names := dns(map[string][]string{"tools.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}, "inside.test": {"127.0.0.1"}})
	cfg := Config{
		Egress: EgressNone,
		Executor: &Side{
			Egress:  EgressList,
			Allow:   []Rule{{Host: "tools.test"}, {Host: "inside.test"}},
			Private: []Rule{{CIDR: "127.0.0.1/32", Port: p}},
			Listen:  "127.0.0.1",
			Relay:   "127.0.0.1:1",
		},
		resolver: names,
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	agent := start(t, cfg)
	executor := startExecutor(t, cfg, loopbackNet)
	dest := fmt.Sprintf("tools.test:%d", p)

	if code, body := executor.get("http://"+dest+"/", nil); code != 200 || body != "hello" {
		t.Errorf("the executor, to a destination of its list: %d %q", code, body)
	}
	if code, body := executor.connect(dest, nil); code != 200 || body != "hello" {
		t.Errorf("the executor's CONNECT to a destination of its list: %d %q", code, body)
	}
	if code, _ := agent.get("http://"+dest+"/", nil); code != http.StatusProxyAuthRequired {
		t.Errorf("the agent, to the executor's destination: %d, want 407", code)
	}
	if r := agent.lastRefusal(dest, RuleNone); r.Side != "" || !strings.Contains(r.Reason, "the box's egress is none") {
		t.Errorf("the agent's refusal: %+v", r)
	}

	other := fmt.Sprintf("other.test:%d", p)
	if code, _ := executor.connect(other, nil); code != http.StatusProxyAuthRequired {
		t.Errorf("the executor, to a destination its list does not name: %d, want 407", code)
	}
	r := executor.lastRefusal(other, RuleNotAllowed)
	if r.Side != SideExecutor || !strings.Contains(r.Reason, "not a destination listed under the executor's egress") {
		t.Errorf("the executor's refusal: %+v", r)
	}
	// Its private ranges are closed as the agent's are, but for its own exceptions.
	if code, _ := executor.get(fmt.Sprintf("http://inside.test:%d/", p+1), nil); code != http.StatusProxyAuthRequired {
		t.Errorf("the executor, to a listed name on loopback, on a port its private: does not open: %d, want 407", code)
	}
	executor.lastRefusal(fmt.Sprintf("inside.test:%d", p+1), RulePrivateRange)
	// The engine's machine stays closed to it, as to the agent.
	closedCfg := cfg
	closedCfg.Closed = []string{"127.0.0.1/32"}
	closed := startExecutor(t, closedCfg, loopbackNet)
	if code, _ := closed.connect(dest, nil); code != http.StatusProxyAuthRequired {
		t.Errorf("the executor, to a closed address its private: opens: %d, want 407", code)
	}
	closed.lastRefusal(dest, RuleClosed)
}

// The executor's proxy takes connections from the executor's network alone:
// one from any other address (the agent's, on the inside network) is
// closed before a byte is read, so the executor's rules are of no use to it.
func TestExecutorProxyRefusesOtherNetworks(t *testing.T) {
	srv := newHello(t)
	cfg := Config{Egress: EgressNone, Executor: &Side{Egress: EgressOpen, Private: []Rule{{CIDR: "127.0.0.1/32"}}, Listen: "127.0.0.1", Relay: "127.0.0.1:1"}}
	executor := startExecutor(t, cfg, netip.MustParsePrefix("127.0.0.2/32"))
	get := func(from string) (int, error) {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: executor.proxy}),
			DialContext:       dialer.DialContext,
			DisableKeepAlives: true,
		}}
		resp, err := client.Get(srv.URL + "/")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get("127.0.0.2"); err != nil || code != 200 {
		t.Errorf("from the executor's network: %d %v, want 200", code, err)
	}
	if code, err := get("127.0.0.1"); err == nil {
		t.Errorf("from another network: answered %d, want the connection closed", code)
	}
	if !strings.Contains(executor.logs.String(), "outside the executor's network 127.0.0.2/32, closed") {
		t.Errorf("the gate's log does not say it closed the connection: %s", executor.logs.String())
	}
	if got := executor.refused(); len(got) != 0 {
		t.Errorf("refusals: %+v", got)
	}
}

// The executor's published port, published by the gate, reaches the
// executor: bytes both ways, whatever the protocol.
func TestExecutorRelay(t *testing.T) {
	srv := newHello(t)
	cfg := Config{Egress: EgressNone, Executor: &Side{Egress: EgressNone, Listen: "127.0.0.1", Relay: srv.Listener.Addr().String()}}
	executor := startExecutor(t, cfg, loopbackNet)
	for range 3 {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + executor.relay + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello" {
			t.Errorf("through the relay: %d %q", resp.StatusCode, body)
		}
	}
}

func TestExecutorSideConfig(t *testing.T) {
	good := `{"egress":"none","executor":{"egress":"list","allow":[{"host":"api.test"}],"private":[{"cidr":"10.0.0.0/8"}],"listen":"exec-gate","relay":"executor:4788"}}`
	cfg, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Executor; s == nil || s.Egress != EgressList || len(s.Allow) != 1 || s.Listen != "exec-gate" || s.Relay != "executor:4788" {
		t.Errorf("executor side %+v", cfg.Executor)
	}
	back, _ := json.Marshal(cfg)
	if string(back) != good {
		t.Errorf("round trip: %s", back)
	}
	if cfg, err := ParseConfig([]byte(`{"egress":"open"}`)); err != nil || cfg.Executor != nil {
		t.Errorf("a gate without the executor's side: %+v %v", cfg.Executor, err)
	}
	for bad, want := range map[string]string{
		`{"egress":"open","executor":{"egress":"all","listen":"exec-gate","relay":"executor:4788"}}`:                      `the executor's side: egress "all" is not`,
		`{"egress":"open","executor":{"egress":"none","allow":[{"host":"a.test"}],"listen":"g","relay":"executor:4788"}}`: `the executor's side: egress "none" takes no allow rules`,
		`{"egress":"open","executor":{"egress":"list","allow":[{"host":"*"}],"listen":"g","relay":"executor:4788"}}`:      "the executor's side: allow rule 1",
		`{"egress":"open","executor":{"egress":"none","relay":"executor:4788"}}`:                                          "the executor's side has no address to listen on",
		`{"egress":"open","executor":{"egress":"none","listen":"g","relay":"executor"}}`:                                  `relay "executor" is not host:port`,
		`{"egress":"open","executor":{"egress":"none","listen":"g","relay":"executor:4788","extra":1}}`:                   "unknown field",
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

func TestListenAddressAndItsNetwork(t *testing.T) {
	a, err := listenAddress(context.Background(), "127.0.0.2")
	if err != nil || a != netip.MustParseAddr("127.0.0.2") {
		t.Fatalf("listenAddress: %v %v", a, err)
	}
	n, err := networkOf(a)
	if err != nil || n != loopbackNet {
		t.Errorf("networkOf(%s) = %v %v, want %v", a, n, err, loopbackNet)
	}
	if _, err := networkOf(netip.MustParseAddr("233.252.0.77")); err == nil || !strings.Contains(err.Error(), "no interface on the network of 233.252.0.77") {
		t.Errorf("networkOf an address of no interface: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := listenAddress(ctx, "boxes-test.invalid"); err == nil || !strings.Contains(err.Error(), "does not resolve") {
		t.Errorf("listenAddress of a name that does not resolve: %v", err)
	}
}
