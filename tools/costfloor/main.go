// Command costfloor is the cheapest Go client for the load that
// scripts/cost.sh puts on the daemon: n loops, each POSTing one streaming
// chat completion per interval over a kept-alive connection and discarding
// the body unread. It parses nothing, times nothing and exports nothing, so
// its CPU is what the Go runtime and the kernel charge for the same
// connections, reads and wakeups: the floor under the daemon's own cost.
package main

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 50, "concurrent probe loops")
	interval := flag.Duration("interval", 15*time.Second, "time between a loop's requests")
	url := flag.String("url", "http://127.0.0.1:18931/v1/chat/completions", "chat completions URL")
	model := flag.String("model", "servingprobe-sim", "model name")
	tokens := flag.Int("tokens", 32, "max_tokens per request (ignore_eos, as the daemon's probes, so every request streams this many)")
	flag.Parse()

	body := []byte(`{"model":` + strconv.Quote(*model) + `,"messages":[{"role":"user","content":"Say hello."}],` +
		`"max_tokens":` + strconv.Itoa(*tokens) + `,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`)
	for i := range *n {
		go func() {
			c := &http.Client{Timeout: *interval}
			// Spread the loops over the interval, as the daemon's start offsets do.
			time.Sleep(time.Duration(i) * *interval / time.Duration(*n))
			t := time.NewTicker(*interval)
			for {
				if resp, err := c.Post(*url, "application/json", bytes.NewReader(body)); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				<-t.C
			}
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}
