//go:build tools

// Package tools pins the commands build.sh compiles; it is never built itself.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
