package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/servingprobe/servingprobe/simulator"
)

func addSimulateCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	cmd := app.Command("simulate", "Run the built-in LLM server simulator, with a latency model and fault injection. It serves sglang's /generate; OpenAI's completions, chat, Responses and embeddings; Anthropic's Messages; ollama's /api/generate and /api/chat; TensorRT-LLM's generate and generate_stream; truss; and /metrics in vLLM's or sglang's names.")
	simCfg := simulator.AddFlags(cmd)
	webFlags := kingpinflag.AddFlags(cmd, "127.0.0.1:8000")
	return func(ctx context.Context, env *cliEnv) error {
		sim, err := simulator.New(*simCfg, env.Logger)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
		errc := make(chan error, 1)
		go func() { errc <- web.ListenAndServe(srv, webFlags, env.Slog) }()
		level.Info(env.Logger).Log("msg", "Simulator listening", "addresses", (*webFlags.WebListenAddresses)[0], "model", simCfg.Model)
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
		}
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
