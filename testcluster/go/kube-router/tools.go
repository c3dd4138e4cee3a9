//go:build tools

// Package tools pins the commands build.sh compiles; it is never built itself.
package tools

import (
	_ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
)
