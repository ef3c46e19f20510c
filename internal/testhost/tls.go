package testhost

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// WriteTLS makes a CA, a server certificate for addr and a client
// certificate, and writes them as dockerd and the docker client expect:
// dir/server-tls and dir/client-tls, each with ca.pem, cert.pem, key.pem.
func WriteTLS(dir, addr string) (serverDir, clientDir string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "boxes test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return "", "", err
	}
	leaf := func(serial int64, usage x509.ExtKeyUsage, ip net.IP) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: "boxes test " + ip.String()},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.IPAddresses = []net.IP{ip}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	write := func(sub string, der []byte, key *ecdsa.PrivateKey) (string, error) {
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", err
		}
		files := map[string][]byte{
			"ca.pem":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
			"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(d, name), data, 0o600); err != nil {
				return "", err
			}
		}
		return d, nil
	}
	ip := net.ParseIP(addr)
	sDER, sKey, err := leaf(2, x509.ExtKeyUsageServerAuth, ip)
	if err != nil {
		return "", "", err
	}
	cDER, cKey, err := leaf(3, x509.ExtKeyUsageClientAuth, ip)
	if err != nil {
		return "", "", err
	}
	if serverDir, err = write("server-tls", sDER, sKey); err != nil {
		return "", "", err
	}
	if clientDir, err = write("client-tls", cDER, cKey); err != nil {
		return "", "", err
	}
	return serverDir, clientDir, nil
}
