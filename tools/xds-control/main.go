// mesh-xds: the mesh's own xDS control plane (issue 30). It serves ADS (gRFC A27) on loopback
// to gRPC's proxyless clients, from a JSON file the mesh's launcher writes (config.go), and
// pushes every change to it, or to PUT /config on its admin port, to the clients at once.
//
//	mesh-xds -config xds.json [-ads 127.0.0.1:0] [-admin 127.0.0.1:0] [-ready FILE]
//
// Once serving it prints `mesh-xds: ads HOST:PORT admin HOST:PORT` and writes the same as
// JSON into -ready. Admin (HTTP, loopback): GET /config, PUT /config, GET /resources?node=N
// (what node N is sent, as JSON), GET /healthz. With MESH_XDS_TOKEN set, every admin request
// but GET /healthz needs `Authorization: Bearer <token>`, and every one a loopback Host naming
// the admin's port (admin_gate.go). A file that does not parse is reported on stderr and the
// last good config keeps serving.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachelog "github.com/envoyproxy/go-control-plane/pkg/log"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
)

func main() {
	configPath := flag.String("config", "", "the JSON file to serve and watch (required)")
	adsAddr := flag.String("ads", "127.0.0.1:0", "where ADS listens (keep it on loopback)")
	adminAddr := flag.String("admin", "127.0.0.1:0", "where the admin HTTP listens")
	ready := flag.String("ready", "", "a file to write the bound addresses to, as JSON")
	poll := flag.Duration("poll", 100*time.Millisecond, "how often the file is read for changes")
	verbose := flag.Bool("v", false, "log the snapshot cache's debug lines to stderr")
	flag.Parse()
	if *configPath == "" {
		fmt.Fprintln(os.Stderr, "mesh-xds: -config FILE is required")
		os.Exit(2)
	}
	var logger cachelog.Logger
	if *verbose {
		logger = cachelog.LoggerFuncs{
			DebugFunc: log.Printf, InfoFunc: log.Printf, WarnFunc: log.Printf, ErrorFunc: log.Printf,
		}
	}
	if err := run(newPlane(*configPath, logger), *adsAddr, *adminAddr, *ready, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "mesh-xds:", err)
		os.Exit(1)
	}
}

func run(p *plane, adsAddr, adminAddr, ready string, poll time.Duration) error {
	if _, err := p.reload(); err != nil {
		return fmt.Errorf("%s: %w", p.path, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	adsLis, err := net.Listen("tcp", adsAddr)
	if err != nil {
		return fmt.Errorf("-ads %s: %w", adsAddr, err)
	}
	adminLis, err := net.Listen("tcp", adminAddr)
	if err != nil {
		return fmt.Errorf("-admin %s: %w", adminAddr, err)
	}
	grpcServer := grpc.NewServer()
	discovery.RegisterAggregatedDiscoveryServiceServer(grpcServer, serverv3.NewServer(ctx, p.cache, nil))
	go func() { _ = grpcServer.Serve(adsLis) }()
	handler := gated(adminHandler(p), adminLis.Addr().(*net.TCPAddr), adminToken())
	admin := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = admin.Serve(adminLis) }()
	bound := map[string]string{"ads": adsLis.Addr().String(), "admin": adminLis.Addr().String()}
	if err := writeReady(ready, bound); err != nil {
		return err
	}
	fmt.Printf("mesh-xds: ads %s admin %s\n", bound["ads"], bound["admin"])
	watch(ctx, p, poll)
	grpcServer.Stop()
	return admin.Close()
}

// watch reloads the file every `poll` until ctx ends; a bad file is said once per change.
func watch(ctx context.Context, p *plane, poll time.Duration) {
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		changed, err := p.reload()
		switch {
		case err != nil && err.Error() != lastErr:
			lastErr = err.Error()
			log.Printf("mesh-xds: %s: %v (the last good config keeps serving)", p.path, err)
		case changed:
			lastErr = ""
			_, version := p.current()
			log.Printf("mesh-xds: pushed version %d", version)
		}
	}
}

func writeReady(path string, bound map[string]string) error {
	if path == "" {
		return nil
	}
	raw, _ := json.Marshal(bound)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
