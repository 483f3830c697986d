package exporter

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/servingprobe/servingprobe/prober"
)

// routeClass is what a route may cause. The gate (loadGate) holds every
// route of class makesLoad to one rule, whatever its method: what matters
// is whether answering the request sends traffic, not whether it is a GET.
type routeClass int

const (
	// readOnly routes show state: pages, metrics, the config, results.
	// Any site may read them through a visitor's browser (it cannot see
	// the answer without CORS, which the daemon never grants).
	readOnly routeClass = iota
	// makesLoad routes send requests to a target (/probe), start or stop a
	// bench window, reload the config (which restarts the probe loops), or
	// make the daemon itself work for a while (a CPU profile or a trace).
	makesLoad
)

func (c routeClass) String() string {
	if c == makesLoad {
		return "makes load"
	}
	return "read-only"
}

// defaultClass is the class of a route registered without one (Handle):
// read-only if its pattern names GET (which also matches HEAD), else
// makesLoad. A new route that changes something is thus behind the gate
// without anyone having to remember it; a GET route that makes load says
// so where it is registered (Daemon.route).
func defaultClass(pattern string) routeClass {
	if method, _, ok := strings.Cut(pattern, " "); ok && method == http.MethodGet {
		return readOnly
	}
	return makesLoad
}

// route registers h under pattern with its class. Every route of the mux
// is registered here, so d.classes lists them all.
func (d *Daemon) route(pattern string, class routeClass, h http.Handler) {
	d.classes[pattern] = class
	d.mux.Handle(pattern, h)
}

// loadGate is the one check every request to a route of class makesLoad
// passes, whatever its method: the gate of what may start load. It refuses
//
//   - a request a browser marks as coming from another site (403):
//     Sec-Fetch-Site other than same-origin or none, or, from a browser
//     that does not send Fetch Metadata, an Origin whose host is not the
//     request's Host. Otherwise a page on any site could make a visitor's
//     browser start load: an <img src=".../probe?target=x"> sends a GET
//     with no preflight, a form a POST; with the daemon's basic auth cached,
//     or on a network the browser can reach and the attacker cannot, it
//     would be served. Callers that are not browsers (curl, Prometheus
//     scraping /probe, the --remote CLI) send neither header and pass, as
//     do the daemon's own pages (same-origin) and a typed URL (none).
//   - a body that is not application/json (415) on a method that carries
//     one (any but GET, HEAD and OPTIONS): a cross-site page can send
//     a text/plain or form body without a preflight; requiring JSON forces
//     a cross-site fetch into a preflight the daemon never answers. An
//     empty body (POST /-/reload, DELETE) needs no type.
//
// Read-only routes pass untouched, so the landing page, /metrics and the
// API's GETs stay open to browsers as before. Basic auth and TLS
// (--web.config.file) apply before this, to every route.
func (d *Daemon) loadGate(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := d.mux.Handler(r)
		if class, known := d.classes[pattern]; pattern == "" || (known && class == readOnly) {
			// No route (the mux answers 404 or 405) or a read-only one. A
			// pattern not in d.classes cannot be (route registers them
			// all); it would be gated.
			next.ServeHTTP(w, r)
			return
		}
		// CrossOriginProtection lets GET, HEAD and OPTIONS through as
		// requests that change nothing; on a load route they do, so the
		// request is checked as the POST it acts as.
		checked := r
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			checked = r.WithContext(r.Context())
			checked.Method = http.MethodPost
		}
		if err := cop.Check(checked); err != nil {
			WriteError(w, "cross-site request refused: a request that starts load must come from the daemon's own pages or from a client that is not a browser", http.StatusForbidden)
			return
		}
		if checked == r && !jsonOrEmpty(r) {
			WriteError(w, "unsupported Content-Type "+strconv.Quote(prober.TruncateUTF8(r.Header.Get("Content-Type"), 100))+": a request's body must be application/json", http.StatusUnsupportedMediaType)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// jsonOrEmpty reports whether r's body is empty and untyped, or typed
// application/json.
func jsonOrEmpty(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" && (r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody) {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// WriteError is http.Error for the daemon's API: it answers with status
// and the error as JSON, {"error": msg}, the shape docs/api.md gives every
// error of the daemon's API. It is the one place that shape is written.
func WriteError(w http.ResponseWriter, msg string, status int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// The message may quote the request (a Content-Type, a target name):
	// a browser must not sniff it into HTML.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	// Readable as curl prints it: "<secret>", not "\u003csecret\u003e";
	// the type and nosniff keep a browser from reading it as HTML.
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Error string `json:"error"`
	}{msg})
}
