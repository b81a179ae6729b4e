-- join phase "control-plane-endpoint" (moonadm's own): on a control plane joining a cluster whose
-- init asked for a virtual IP (ConfigMap kube-system/moonadm-control-plane-endpoint), this node's
-- keepalived + haproxy static Pods and haproxy's reader token, before wait-control-plane. The other
-- nodes' haproxy adds this apiserver itself once it is in the `kubernetes` EndpointSlice.
local lazy = require "framework.lazy"
local vip = lazy.require "endpoint.vip"
local nodeview = lazy.require "node.view"
local log = lazy.require "framework.log"

return {
  name = "control-plane-endpoint",
  flags = { "config", "control-plane", "control-plane-endpoint-vip-interface", "dry-run" },
  desc = "Write the static Pods of the control-plane endpoint's virtual IP, when the cluster has one",
  requires = { "kubeconfig" }, -- control-plane-prepare's admin.conf reads the cluster's settings
  run_if = function(ctx) return nodeview.is_control_plane(ctx) end,
  run = function(ctx)
    if ctx.dry_run then
      log.info("[dryrun] Would read ConfigMap kube-system/%s and write the virtual IP's static Pods if it exists",
        vip.CONFIGMAP)
      return
    end
    local c = vip.admin_client(ctx)
    local s = vip.cluster_settings(c)
    if not s then
      log.v(1, "[control-plane-endpoint] the cluster has no ConfigMap kube-system/%s: no virtual IP to join", vip.CONFIGMAP)
      return
    end
    vip.write_node(ctx, s, c, false)
    vip.write_token(ctx, c)
  end,
}
