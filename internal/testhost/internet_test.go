package testhost

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestIntegrationInternet makes the made-up internet, reaches its servers and
// its DNS from this machine, rebinds a name, and checks the teardown removes
// the namespace, the veth pair and the routes. Real engine: none is used;
// it checks, as root, the made-up internet TestIntegrationNetworkDoor's box
// reaches, which has no counterpart in the fake.
func TestIntegrationInternet(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	var ns string
	t.Run("up", func(t *testing.T) {
		in := StartInternet(t, map[string]string{"web.test": WebA})
		ns = in.NS
		for _, addr := range []string{WebA + ":80", WebB + ":8080", Metadata + ":80"} {
			body := get(t, "http://"+addr+"/x")
			if want := "hello from " + addr; !strings.Contains(body, want) {
				t.Errorf("GET %s: %q, want %q", addr, body, want)
			}
		}
		// The machine's end holds no public address: a gate's closed
		// machine addresses stay what they were while the internet exists.
		if out, _ := execOutput("ip", "-o", "addr", "show", "to", "198.51.100.0/24"); strings.TrimSpace(out) != "" {
			t.Errorf("this machine holds an address of the made-up internet: %s", out)
		}
		if seen := in.Seen(); len(seen) != 3 || seen[0].Path != "/x" {
			t.Errorf("seen %+v, want three requests for /x", seen)
		}
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "udp", DNSServer+":53")
		}}
		lookup := func(name string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			addrs, err := r.LookupHost(ctx, name)
			if err != nil {
				return err.Error()
			}
			return strings.Join(addrs, ",")
		}
		if got := lookup("web.test"); got != WebA {
			t.Errorf("web.test resolves to %q, want %s", got, WebA)
		}
		in.SetName("web.test", "10.9.9.9")
		if got := lookup("web.test"); got != "10.9.9.9" {
			t.Errorf("web.test rebound resolves to %q, want 10.9.9.9", got)
		}
		if got := lookup("nowhere.test"); !strings.Contains(got, "no such host") {
			t.Errorf("nowhere.test: %q, want no such host", got)
		}
	})
	if ns == "" {
		return
	}
	if _, err := os.Stat("/var/run/netns/" + ns); err == nil {
		t.Errorf("namespace %s left behind", ns)
	}
	if _, err := os.Stat("/sys/class/net/" + ns + "h"); err == nil {
		t.Errorf("veth %sh left behind", ns)
	}
	if out, _ := execOutput("ip", "route", "show", "198.51.100.0/24"); strings.TrimSpace(out) != "" {
		t.Errorf("route left behind: %s", out)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
