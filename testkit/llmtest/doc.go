// Package llmtest holds test helpers for code that talks to LLM servers: a
// scripted stream (status, headers, chunks with delays) that can be served
// by an in-memory RoundTripper, for testing/synctest where sockets are not
// allowed, or by an httptest server that flushes each chunk, for
// integration tests over loopback.
package llmtest
