// pause: the first process of every pod sandbox on the rehearsal's real node (registry.k8s.io's
// pause image cannot be pulled here). It holds the pod's namespaces open, reaps any child
// handed to it (it is PID 1 of a pod that shares its process namespace) and exits 0 on
// SIGTERM or SIGINT, as the upstream pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
