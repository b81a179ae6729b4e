-- What `certs rotate-ca` knows before its phases run: the cluster's ClusterConfiguration from
-- kubeadm-config (certificatesDir, the key algorithm, the CA validity, etcd's SANs) and this node's
-- name and address as its files say, so pki.tree's builders serve it.
local log = require "framework.log"
local cadmin = require "cluster.admin"
local up = require "cluster.upload_config"
local restart = require "renewal.restart"
local state = require "rotation.state"

local M = {}

M.DATA = {
  "rotation_node", -- this node's name (commands/certs.lua names the same keys: the module loads lazily)
}

function M.prepare(ctx)
  if ctx.data.rotation_node then return end
  local c = cadmin.client(ctx)
  log.info("[rotate-ca] Reading configuration from the %q ConfigMap in namespace %q...", "kubeadm-config", "kube-system")
  local cluster, err = up.read_kubeadm(c)
  if not cluster then error("[rotate-ca] unable to read the cluster's configuration: " .. err, 0) end
  ctx.cfg.cluster = cluster
  -- name (kubelet.conf's certificate) and advertise address (the kube-apiserver manifest), as renewal reads
  -- them: a run killed while etcd restarted left that manifest aside, so it goes back first
  if not ctx.dry_run then restart.put_back_aside() end
  ctx.data.rotation_node = restart.this_node(ctx)
  if ctx.inputs then
    ctx.inputs.cluster = cluster
    -- the rotation under way is an input: --resume never skips a stage the journal recorded for an
    -- earlier rotation (its digest names that one's id)
    local r = state.read(c)
    ctx.inputs.rotation = r and r.id or "none"
  end
end

return M
