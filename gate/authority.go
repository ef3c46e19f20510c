package gate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// The authority's and its leaves' lifetimes. The authority lives as long as
// the gate process that made it (its key is in this process's memory
// alone); a leaf is made again once less than leafRenew of it is left.
const (
	authorityLife = 10 * 365 * 24 * time.Hour
	leafLife      = 24 * time.Hour
	leafRenew     = time.Hour
	// backdate covers a client whose clock runs a little behind the gate's.
	backdate = time.Hour
)

// authority is a gate's certificate authority: the one the agent trusts for
// its credentials' destinations, so that the gate can end the agent's TLS
// to them and add the credential. Its key is made by the gate process when
// it starts and never leaves it: not written anywhere, not served, not
// logged. The certificate is name-constrained to the credentials'
// destinations, so that trusting it vouches for no other host.
type authority struct {
	key     *ecdsa.PrivateKey
	cert    *x509.Certificate
	certPEM []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // by host
	now    func() time.Time
}

// newAuthority makes an authority for the hosts of creds (names and
// addresses), valid from now.
func newAuthority(creds []credential, now func() time.Time) (*authority, error) {
	if now == nil {
		now = time.Now
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the gate's authority: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"boxes"}, CommonName: "boxes gate authority " + t.UTC().Format(time.RFC3339)},
		NotBefore:             t.Add(-backdate),
		NotAfter:              t.Add(authorityLife),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	constrain(tmpl, creds)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("making the gate's authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("making the gate's authority: %w", err)
	}
	return &authority{
		key:     key,
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves:  map[string]*tls.Certificate{},
		now:     now,
	}, nil
}

// unmatchable is a name no host has (RFC 6761's .invalid), permitted when
// no credential goes to a name: an empty permitted list would permit all.
const unmatchable = "boxes-gate.invalid"

// constrain limits what tmpl, an authority, vouches for to the hosts of
// creds: their names, and their addresses, critically (RFC 5280 4.2.1.10).
// A name also permits the names under it: that is how a DNS constraint
// reads.
func constrain(tmpl *x509.Certificate, creds []credential) {
	for _, c := range creds {
		if a, err := netip.ParseAddr(c.host); err == nil {
			ip := net.IP(a.AsSlice())
			n := &net.IPNet{IP: ip, Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
			if !slices.ContainsFunc(tmpl.PermittedIPRanges, func(p *net.IPNet) bool { return p.String() == n.String() }) {
				tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, n)
			}
			continue
		}
		if !slices.Contains(tmpl.PermittedDNSDomains, c.host) {
			tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, c.host)
		}
	}
	if len(tmpl.PermittedDNSDomains) == 0 {
		tmpl.PermittedDNSDomains = []string{unmatchable}
	}
	if len(tmpl.PermittedIPRanges) == 0 {
		tmpl.ExcludedIPRanges = []*net.IPNet{
			{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		}
	}
	tmpl.PermittedDNSDomainsCritical = true
}

// leaf is a certificate for host signed by the authority, made on first
// use and kept until it is near its end.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if c, ok := a.leaves[host]; ok && now.Add(leafRenew).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	// No common name: the subject alternative name says the host, and a
	// client that still reads a common name as a DNS name would check an
	// address written there against the name constraints.
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"boxes gate"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(leafLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("making a certificate for %s: %w", host, err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key, Leaf: parsed}
	a.leaves[host] = c
	return c, nil
}

// serialNumber is a random positive serial of 128 bits.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, errors.New("making a certificate's serial number: " + err.Error())
	}
	return n.Add(n, big.NewInt(1)), nil
}
