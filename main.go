// Command ratelimit tests Redis-backed rate limiters: what a limiter script
// answers (eval), whether it is atomic (race), how an HTTP service behaves
// under a constant arrival rate (load), and where keys land on a cluster
// (keyslot).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ratelimit-dev/ratelimit/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx)
	stop()
	os.Exit(code)
}
