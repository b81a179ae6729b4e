//go:build tools

// Package tools pins the command the lab builds: etcdutl, for `moonadm etcd snapshot restore`.
package tools

import (
	_ "go.etcd.io/etcd/etcdutl/v3"
)
