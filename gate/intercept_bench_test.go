package gate

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/benchtable"
)

// BenchmarkIntercept measures what ending the agent's TLS costs: a request
// to a credential's destination, which the gate ends and sends on with the
// header, against the same request to a destination without one, a
// tunnel; an in-process gate and an HTTPS server on loopback, median of 30
// each. Twice: a new connection for each request (CONNECT, TLS, GET, as
// each curl or git run makes), and requests on one kept connection (as a
// long-lived client makes them); and a gate's first request, which also
// makes the gate's own connection to the destination.
func BenchmarkIntercept(b *testing.B) {
	ca := newTestCA(b, "bench CA")
	api := newUpstream(b, ca, "api.test", true)
	other := newUpstream(b, ca, "other.test", true)
	cfg := httpsConfig(api, ca.pem)
	cfg.logs = io.Discard
	g := start(b, cfg)
	gateRoots := x509.NewCertPool()
	gateRoots.AddCert(g.authorityOf())
	intercepted := fmt.Sprintf("https://api.test:%d/", api.port())
	tunnelled := fmt.Sprintf("https://other.test:%d/", other.port())

	for i := 0; i < b.N; i++ {
		fresh := map[string]time.Duration{}
		kept := map[string]time.Duration{}
		for _, c := range []struct {
			name, url string
			roots     *x509.CertPool
		}{{"intercepted", intercepted, gateRoots}, {"tunnelled", tunnelled, ca.pool()}} {
			fresh[c.name] = medianOf(b, 30, func() *http.Client { return benchClient(g.proxy, c.roots, false) }, c.url)
			keep := benchClient(g.proxy, c.roots, true)
			kept[c.name] = medianOf(b, 30, func() *http.Client { return keep }, c.url)
			keep.CloseIdleConnections()
		}
		// A gate's first request to the destination also makes its own
		// connection there (through its proxy, then TLS): a new gate each.
		first := medianOf(b, 30, func() *http.Client {
			g := start(b, cfg)
			roots := x509.NewCertPool()
			roots.AddCert(g.authorityOf())
			return benchClient(g.proxy, roots, false)
		}, intercepted)
		b.Logf("a new connection each: intercepted %v (a gate's first: %v), tunnelled %v; on a kept connection: intercepted %v, tunnelled %v",
			fresh["intercepted"], first, fresh["tunnelled"], kept["intercepted"], kept["tunnelled"])
		benchtable.Report(b, benchtable.Row{Figure: "an HTTPS request to a credential's destination, ended by the gate (new connection, median of 30)",
			Value: ms(fresh["intercepted"]), Unit: "ms", Baseline: "the same through a tunnel", Base: ms(fresh["tunnelled"])})
		benchtable.Report(b, benchtable.Row{Figure: "an HTTPS request to a credential's destination, ended by the gate (kept connection, median of 30)",
			Value: ms(kept["intercepted"]), Unit: "ms", Baseline: "the same through a tunnel", Base: ms(kept["tunnelled"])})
		benchtable.Report(b, benchtable.Row{Figure: "the same, a gate's first (its own connection to the destination made)",
			Value: ms(first), Unit: "ms", Baseline: "a request through a tunnel (new connection)", Base: ms(fresh["tunnelled"])})
	}
}

// benchClient is a client of the gate's proxy at proxy trusting roots,
// keeping its connection when keep.
func benchClient(proxy string, roots *x509.CertPool, keep bool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: proxy}),
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
		DisableKeepAlives: !keep,
	}}
}

// medianOf is the median time of n GETs of u, each by the client of
// client(), after one not counted.
func medianOf(b *testing.B, n int, client func() *http.Client, u string) time.Duration {
	get := func() time.Duration {
		c := client()
		began := time.Now()
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %s", u, resp.Status)
		}
		return time.Since(began)
	}
	get()
	times := make([]time.Duration, n)
	for i := range times {
		times[i] = get()
	}
	slices.Sort(times)
	return times[n/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
