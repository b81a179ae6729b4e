-- The kubelet's files on a node: `require "kubelet"`. Used by init/join kubelet-start (and later
-- upgrade): config.yaml, kubeadm-flags.env and, under NodeLocalCRISocket, instance-config.yaml.
local config = require "kubelet.config"
local flags = require "kubelet.flags_env"
local cri = require "cri.socket"
local kubeadm_config = require "config"
local log = require "framework.log"
local nodeview = require "node.view"

local M = { config = config, flags = flags, cri = cri }

-- Writes the kubelet files for this node. opts.taints_as_flags: a worker join registers its taints
-- with --register-with-taints. Returns {config = text, flags = text, instance = text|nil}.
function M.write_files(ctx, opts)
  opts = opts or {}
  local doc = kubeadm_config.node_document(ctx.cfg)
  local nodereg = doc.nodeRegistration or {}
  local socket = cri.socket(ctx)
  local gate = ctx:gate("NodeLocalCRISocket")
  local list = flags.list(ctx.cfg.cluster, nodereg, {
    socket = socket, gate_cri = gate, node_name = nodeview.name(ctx),
    hostname = kubeadm_config.node_name_default(), taints_as_flags = opts.taints_as_flags })
  local out = {}
  ctx:mkdir(config.DIR, "0700")
  out.flags = flags.text(list)
  log.info("[kubelet-start] Writing kubelet environment file with flags to file %q", flags.PATH)
  ctx:write(flags.PATH, out.flags, "0644")
  if gate then
    out.instance = config.instance_text(socket)
    log.info("[kubelet-start] Writing kubelet configuration to file %q", config.INSTANCE_PATH)
    ctx:write(config.INSTANCE_PATH, out.instance, "0644")
  end
  out.config = config.render(ctx, socket)
  log.info("[kubelet-start] Writing kubelet configuration to file %q", config.PATH)
  ctx:write(config.PATH, out.config, "0644")
  return out
end

return M
