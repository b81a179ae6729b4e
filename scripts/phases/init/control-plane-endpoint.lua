-- init phase "control-plane-endpoint" (moonadm's own, off unless --control-plane-endpoint-vip is
-- given): the static Pods of a virtual IP held by the control planes (keepalived + haproxy, kubeadm's
-- HA guide), written before wait-control-plane so the kubelet starts them with the control plane.
-- Their settings reach the cluster in control-plane-endpoint-reader (scripts/endpoint/vip.lua).
local lazy = require "framework.lazy"
local vip = lazy.require "endpoint.vip"

return {
  name = "control-plane-endpoint",
  flags = { "config", "control-plane-endpoint", "control-plane-endpoint-vip", "control-plane-endpoint-vip-haproxy-image",
    "control-plane-endpoint-vip-interface", "control-plane-endpoint-vip-keepalived-image",
    "control-plane-endpoint-vip-router-id", "dry-run" },
  desc = "Write the static Pods of a control-plane endpoint's virtual IP (keepalived + haproxy)",
  requires = { "pki" }, -- haproxy's backend reader checks the apiserver with the cluster CA
  run_if = function(ctx) return vip.init_settings(ctx) ~= nil end,
  run = function(ctx) vip.write_node(ctx, vip.init_settings(ctx), nil, true) end,
}
