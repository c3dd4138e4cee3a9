//go:build tools

// Package tools pins the commands build.sh compiles; it is never built itself.
package tools

import (
	_ "github.com/coredns/coredns"
)
