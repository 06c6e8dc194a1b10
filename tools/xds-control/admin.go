package main

// The admin HTTP: read and replace the config, see what a node is sent. Loopback only.

import (
	"fmt"
	"io"
	"net/http"
)

const maxConfigBytes = 4 << 20

func adminHandler(p *plane) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, _ *http.Request) {
		raw, _ := p.current()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	})
	mux.HandleFunc("PUT /config", func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConfigBytes))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if err := p.replace(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, version := p.current()
		fmt.Fprintf(w, "{\"version\": %d}\n", version)
	})
	mux.HandleFunc("GET /resources", func(w http.ResponseWriter, r *http.Request) {
		node := r.URL.Query().Get("node")
		raw, err := p.dump(node)
		if err != nil {
			http.Error(w, fmt.Sprintf("node %q: %v", node, err), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, version := p.current()
		fmt.Fprintf(w, "{\"version\": %d}\n", version)
	})
	return mux
}
