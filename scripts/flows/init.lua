-- `moonadm init`: kubeadm v1.35's init phases, in kubeadm's order. One entry per line: a phase
-- name (phases/init/NAME.lua, or a site phase phases/site/NAME.lua), or when("Gate", "name").
-- An exported copy edited and given with --flow runs instead (see docs/scripting.md).
local flow = require "framework.flow"

return flow.from_list("init", {
  "preflight",
  "certs",
  "kubeconfig",
  "etcd",
  "control-plane",
  "kubelet-start",
  "control-plane-endpoint",        -- moonadm's own, with --control-plane-endpoint-vip: keepalived + haproxy
  "wait-control-plane",
  "control-plane-endpoint-reader", -- (with it) the VIP answers; its settings and haproxy's reader uploaded
  "upload-config",
  "upload-certs",
  "mark-control-plane",
  "bootstrap-token",
  "kubelet-finalize",
  "addon",
  "show-join-command",
})
