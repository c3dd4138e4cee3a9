//go:build tools

// Package tools pins cosign for .ci/install-cosign; it is never built itself.
package tools

import (
	_ "github.com/sigstore/cosign/v3/cmd/cosign"
)
