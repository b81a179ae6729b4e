//go:build tools

// Package tools pins the node commands the real-kubelet lab builds for v1.37.2 (kubelet, kube-proxy), so
// `go mod tidy` keeps their dependencies; a module of its own keeps the control-plane set's key as is.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
