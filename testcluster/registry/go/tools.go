//go:build tools

// Package tools pins the registry command .ci/install-registry compiles; it is never built itself.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
)
