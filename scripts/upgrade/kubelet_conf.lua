-- The hidden kubeconfig phase (KEP-4471, seed 000): on a control-plane node, kubelet.conf's server
-- goes from the control-plane endpoint to the local kube-apiserver, then the kubelet restarts.
-- Workers and a kubelet.conf already pointing elsewhere are left alone.
local yaml = require "moonadm.yaml"
local log = require "framework.log"
local unode = require "upgrade.node"
local nodeview = require "node.view"
local runtime_mod = require "runtime"
local kubeconfig = require "kube.kubeconfig"

local M = {}

-- Rewrites the server of the current context's cluster in a kubeconfig text from `from` to `to`.
-- Returns the new text, or nil when the server is not `from` (and the server found).
function M.rewrite(text, from, to)
  local kc, err = kubeconfig.current(text, unode.KUBELET_CONF)
  if not kc then error(err, 0) end
  if kc.cluster.cluster.server ~= from then return nil, kc.cluster.cluster.server end
  kc.cluster.cluster.server = to
  return yaml.encode(kc.doc), from
end

function M.run(ctx)
  if not nodeview.runs_control_plane(ctx) then
    log.info("[upgrade/kubeconfig] Skipping phase. Not a control plane node.")
    return
  end
  local text = ctx:read(unode.KUBELET_CONF)
  if not text then
    log.info("[upgrade/kubeconfig] %s does not exist; nothing to update", unode.KUBELET_CONF)
    return
  end
  local local_url = nodeview.local_url(ctx)
  local cpe_url = nodeview.cpe_url(ctx)
  if cpe_url == local_url then
    log.v(1, "[upgrade/kubeconfig] the control-plane endpoint is the local API server; %s unchanged", unode.KUBELET_CONF)
    return
  end
  local new, server = M.rewrite(text, cpe_url, local_url)
  if not new then
    log.v(1, "[upgrade/kubeconfig] %s points to %s, not to %s; unchanged", unode.KUBELET_CONF, tostring(server), cpe_url)
    return
  end
  if ctx.dry_run then
    log.info("[dryrun] Would change the Server URL from %q to %q in %s and try to restart kubelet", cpe_url, local_url,
      unode.KUBELET_CONF)
    return
  end
  log.info("[upgrade/kubeconfig] Updating the server of %s from %q to %q", unode.KUBELET_CONF, cpe_url, local_url)
  ctx:write(unode.KUBELET_CONF, new, "0600")
  local rt = runtime_mod.for_ctx(ctx)
  log.info("[upgrade/kubeconfig] Restarting the kubelet")
  rt.restart_kubelet(ctx)
end

return M
