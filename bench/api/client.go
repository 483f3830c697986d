package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client is the other half of the windows' HTTP API: what `bench
// --remote` uses to start a window on a daemon, follow it and cancel it.
// It lives beside the handlers so that a path or a status code changes in
// one package.
type Client struct {
	HTTP *http.Client
	base string // the daemon's URL, without a trailing slash
}

// NewClient checks the daemon's URL (http or https) and returns a client
// for it.
func NewClient(c *http.Client, daemon string) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(daemon, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("%q: want an http(s) URL", daemon)
	}
	return &Client{HTTP: c, base: base.String()}, nil
}

// Redacted is the daemon's URL with any password masked, for messages.
func (c *Client) Redacted() string {
	u, err := url.Parse(c.base)
	if err != nil {
		return ""
	}
	return u.Redacted()
}

// Start posts a window's body (the JSON POST /api/v1/benches takes) and
// returns the accepted window.
func (c *Client) Start(ctx context.Context, body []byte) (View, error) {
	var v View
	err := c.call(ctx, http.MethodPost, "/api/v1/benches", body, http.StatusAccepted, &v)
	return v, err
}

// Get reads a window's state.
func (c *Client) Get(ctx context.Context, id string) (View, error) {
	var v View
	err := c.call(ctx, http.MethodGet, "/api/v1/benches/"+id, nil, http.StatusOK, &v)
	return v, err
}

// Cancel asks the daemon to stop a window. It waits at most five seconds,
// whatever ctx says: it is called when the caller's own context has ended,
// so that an interrupted client does not leave the target loaded.
func (c *Client) Cancel(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.call(ctx, http.MethodDelete, "/api/v1/benches/"+id, nil, http.StatusAccepted, nil)
}

// Follow polls a window every interval until it has ended, calling seen
// with each state read (progress for a terminal line). When ctx ends
// first, it cancels the window on the daemon and returns ctx's error.
func (c *Client) Follow(ctx context.Context, v View, every time.Duration, seen func(View)) (View, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for v.Ended == nil {
		select {
		case <-ctx.Done():
			_ = c.Cancel(v.ID)
			return v, ctx.Err()
		case <-tick.C:
		}
		var err error
		if v, err = c.Get(ctx, v.ID); err != nil {
			return v, err
		}
		seen(v)
	}
	return v, nil
}

// maxAnswer bounds what one API answer may take in memory: a finished
// sweep's records are the largest.
const maxAnswer = 256 << 20

// call does one API call and decodes a JSON answer into out. An answer
// other than want is an error carrying the API's own "error" text.
func (c *Client) call(ctx context.Context, method, path string, body []byte, want int, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := c.base + path
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", method, c.Redacted()+path, resp.StatusCode, msg)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
