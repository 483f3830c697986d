package prober

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestCertExpiry(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d) }
	cert := func(d int) *x509.Certificate { return &x509.Certificate{NotAfter: day(d)} }
	for _, tc := range []struct {
		name string
		cs   *tls.ConnectionState
		want time.Time
	}{
		{"no TLS", nil, time.Time{}},
		{"verified: the intermediate expires first", &tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{cert(90), cert(30)},
			VerifiedChains:   [][]*x509.Certificate{{cert(90), cert(30), cert(3650)}},
		}, day(30)},
		{"two verified chains: the one that lasts longest", &tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{cert(90), cert(5)},
			VerifiedChains: [][]*x509.Certificate{
				{cert(90), cert(5), cert(3650)},
				{cert(90), cert(60), cert(3650)},
			},
		}, day(60)},
		{"verification off: the certificates sent", &tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{cert(90), cert(40)},
		}, day(40)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CertExpiry(tc.cs); !got.Equal(tc.want) {
				t.Errorf("CertExpiry() = %v, want %v", got, tc.want)
			}
		})
	}
}
