-- init phase "control-plane-endpoint-reader" (moonadm's own, with control-plane-endpoint): once the
-- apiserver runs, waits until the virtual IP answers, then uploads the settings a control-plane join
-- reads (ConfigMap kube-system/moonadm-control-plane-endpoint) and haproxy's EndpointSlice reader
-- (a ServiceAccount token that may get default/kubernetes only), and writes that token for this
-- node's haproxy (scripts/endpoint/vip.lua).
local lazy = require "framework.lazy"
local vip = lazy.require "endpoint.vip"
local capi = lazy.require "cluster.api"

return {
  name = "control-plane-endpoint-reader",
  flags = { "config", "control-plane-endpoint", "control-plane-endpoint-vip", "control-plane-endpoint-vip-haproxy-image",
    "control-plane-endpoint-vip-keepalived-image", "control-plane-endpoint-vip-router-id", "dry-run", "kubeconfig" },
  desc = "Wait for the virtual IP, upload its settings and haproxy's EndpointSlice reader",
  requires = { "local-apiserver" },
  run_if = function(ctx) return vip.init_settings(ctx) ~= nil end,
  run = function(ctx)
    local s = vip.init_settings(ctx)
    vip.wait(ctx, s, capi.timeout(ctx, "controlPlaneComponentHealthCheck"))
    local c = vip.admin_client(ctx)
    vip.upload(ctx, s, c)
    vip.write_token(ctx, c)
  end,
}
