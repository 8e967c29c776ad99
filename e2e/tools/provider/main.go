// Command pulumi-resource-kubernetes serves the Kubernetes provider with a schema of our own: the engine asks for the
// schema only for code generation and for reading inputs of an imported object (provider.go, Read), neither of
// which the tests do, so a minimal package spec stands in for the generated one the module does not ship.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
)

//go:embed schema.json
var schema []byte

// version is set with -ldflags -X main.version=...; the engine reads it from the plugin's handshake and GetPluginInfo.
var version = "4.25.0"

func main() { provider.Serve("kubernetes", version, schema, []byte("{}")) }
