package prober

import (
	"crypto/tls"
	"crypto/x509"
	"time"
)

// CertExpiry is when the certificate chain of a TLS connection stops being
// valid, the exporter's servingprobe_tls_cert_expiry_timestamp_seconds (as
// blackbox_exporter exports probe_ssl_earliest_cert_expiry). It is the
// earliest NotAfter of the chain the client verified: a chain is only as
// valid as its first certificate to expire, leaf or intermediate. Where
// the verifier built several chains (a cross-signed root), the client may
// use any of them, so the one that lasts longest counts. With verification
// off (insecure_skip_verify) there is no verified chain and the
// certificates the server sent stand in for it. Zero without TLS.
func CertExpiry(cs *tls.ConnectionState) time.Time {
	if cs == nil {
		return time.Time{}
	}
	var best time.Time
	for _, chain := range cs.VerifiedChains {
		if e := earliestNotAfter(chain); e.After(best) {
			best = e
		}
	}
	if best.IsZero() {
		best = earliestNotAfter(cs.PeerCertificates)
	}
	return best
}

func earliestNotAfter(chain []*x509.Certificate) time.Time {
	var e time.Time
	for _, c := range chain {
		if e.IsZero() || c.NotAfter.Before(e) {
			e = c.NotAfter
		}
	}
	return e
}
