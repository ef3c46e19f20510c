package gate

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestTheAuthoritysKeyIsNeverServed(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	up := newUpstream(t, ca, "api.test", false)
	cfg := httpsConfig(up, ca.pem)
	a, err := newAuthority([]credential{{host: "api.test"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.authority = a
	g := start(t, cfg)
	served := g.authorityOf()
	if !served.Equal(a.cert) {
		t.Fatal("the route port serves another certificate than the gate's authority's")
	}
	keyDER, err := x509.MarshalECPrivateKey(a.key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(a.key)
	raw, err := a.key.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	secrets := [][]byte{raw, keyDER, pkcs8, []byte("PRIVATE KEY")}
	get := func(c *http.Client, u string) []byte {
		resp, err := c.Get(u)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var head bytes.Buffer
		_ = resp.Header.Write(&head)
		return append(head.Bytes(), b...)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	proxied := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: g.proxy})}}
	var answers [][]byte
	for _, path := range []string{CAPath, "/_ca.key", "/_key.pem", "/_ca", "/_authority", "/api/_ca.key", "/_health", "/"} {
		answers = append(answers, get(plain, "http://"+g.route+path), get(plain, "http://"+g.proxy+path), get(proxied, "http://"+g.route+path))
	}
	for _, ans := range answers {
		for _, s := range secrets {
			if len(s) > 0 && bytes.Contains(ans, s) {
				t.Fatalf("an answer of the gate holds the authority's key:\n%s", ans)
			}
		}
	}
	// What CAPath serves is the certificate, byte for byte, and no more.
	resp, err := plain.Get("http://" + g.route + CAPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, a.certPEM) {
		t.Errorf("GET %s is not the authority's certificate alone:\n%s", CAPath, body)
	}
}

func TestNoCredentialNoAuthority(t *testing.T) {
	g := start(t, Config{Egress: EgressOpen})
	resp, err := http.Get("http://" + g.route + CAPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no credential") {
		t.Errorf("GET %s without a credential: %s %q", CAPath, resp.Status, body)
	}
}

func TestAuthorityVouchesForTheCredentialsHostsAlone(t *testing.T) {
	verify := func(a *authority, host string) error {
		leaf, err := a.leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AddCert(a.cert)
		_, err = leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
		return err
	}
	names, err := newAuthority([]credential{{host: "api.test"}, {host: "git.example"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := newAuthority([]credential{{host: "198.51.100.7"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a    *authority
		host string
		ok   bool
	}{
		{names, "api.test", true},
		{names, "git.example", true},
		{names, "evil.test", false},
		{names, "api.test.evil", false},
		{names, "198.51.100.7", false}, // no address credential: none is vouched for
		{addrs, "198.51.100.7", true},
		{addrs, "198.51.100.8", false},
		{addrs, "api.test", false}, // no name credential: no name is vouched for
	} {
		err := verify(tc.a, tc.host)
		if (err == nil) != tc.ok {
			t.Errorf("a leaf for %s under an authority for %v: %v, want ok %v", tc.host, tc.a.cert.PermittedDNSDomains, err, tc.ok)
		}
	}
	if !names.cert.PermittedDNSDomainsCritical || names.cert.Subject.CommonName == "" || names.cert.NotAfter.Before(time.Now().Add(365*24*time.Hour)) {
		t.Errorf("authority %+v", names.cert.Subject)
	}
}

func TestLeavesAreShortLivedAndKept(t *testing.T) {
	now := time.Now()
	a, err := newAuthority([]credential{{host: "api.test"}}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	first, _ := a.leaf("api.test")
	again, _ := a.leaf("api.test")
	if first != again {
		t.Error("a second leaf was made for the same host")
	}
	if life := first.Leaf.NotAfter.Sub(now); life > 25*time.Hour {
		t.Errorf("a leaf lives %s", life)
	}
	now = now.Add(leafLife - leafRenew/2)
	renewed, _ := a.leaf("api.test")
	if renewed == first || !renewed.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Error("a leaf near its end was not made again")
	}
}

func TestConfigReadsACredentialsCA(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	key, _ := x509.MarshalECPrivateKey(ca.key)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: key}))
	cred := func(pemText string) Config {
		return Config{Egress: EgressNone, Credentials: []Credential{{Name: "api", Host: "api.test", Header: "X-Key", Value: secret, CA: pemText}}}
	}
	if err := cred(ca.pem).Validate(); err != nil {
		t.Errorf("a CA: %v", err)
	}
	if err := cred("# a comment\n" + ca.pem + newTestCA(t, "second").pem).Validate(); err != nil {
		t.Errorf("a bundle of two: %v", err)
	}
	for pemText, want := range map[string]string{
		"not pem":       `credential "api": ca: holds no PEM certificate`,
		keyPEM:          `credential "api": ca: holds a EC PRIVATE KEY (PEM block 1): a CA is certificates alone`,
		ca.pem + keyPEM: "holds a EC PRIVATE KEY (PEM block 2)",
		"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n": "holds a certificate that cannot be read (PEM block 1)",
	} {
		err := cred(pemText).Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ca %.30q: %v, want %q", pemText, err, want)
		}
	}
	data, _ := json.Marshal(cred(ca.pem))
	back, err := ParseConfig(data)
	if err != nil || back.Credentials[0].CA != ca.pem {
		t.Errorf("the CA does not travel in the gate's configuration: %v", err)
	}
}
