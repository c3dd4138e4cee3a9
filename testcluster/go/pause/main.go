// Command pause is the pod sandbox's process for the test cluster's real node
// (docs/test-images.md): it holds the pod's namespaces open, reaps the children that
// containers sharing its PID namespace leave behind, and exits 0 on SIGINT or SIGTERM, as
// Kubernetes' own pause does. No registry serves that image here, so it is built from source.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Registered while the package initialises, before main: a SIGTERM that arrived before
// signal.Notify would take the runtime's default path and end the process silently.
var signals = func() chan os.Signal {
	c := make(chan os.Signal, 8)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	return c
}()

func main() {
	// Kubernetes' pause knows -v; --version too, so a probe of either form ends at once.
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("pause (svc test image) 3.10")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
		os.Exit(0)
	}
}

// reap collects every exited child: one SIGCHLD may stand for several.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
