//go:build tools

// Package tools pins the node commands the real-kubelet lab builds (kubelet, kube-proxy), so
// `go mod tidy` keeps their dependencies. They build from the same k8s.io/kubernetes release and
// staging pins as lab/k8s; a module of their own keeps lab/k8s's cache key (and its binaries) as is.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
