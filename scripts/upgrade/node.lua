-- This node as an upgrade sees it: the part of the UpgradeConfiguration the command reads (apply
-- or node), its kubelet.conf, and the advertise address and port of its local kube-apiserver.
local yaml = require "moonadm.yaml"
local nodeview = require "node.view"

local M = {}

M.KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
M.APISERVER_MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml"

-- The part of the UpgradeConfiguration this command reads: apply or node.
function M.part(ctx)
  local u = ctx.cfg.upgrade or {}
  return (ctx.command == "upgrade-node" and u.node or u.apply) or {}
end

-- advertise address and port of the local kube-apiserver manifest (nil when absent), read
-- through ctx (a dry run sees its own files).
function M.local_endpoint(ctx)
  local text = ctx:read(M.APISERVER_MANIFEST)
  local docs = text and yaml.decode(text, M.APISERVER_MANIFEST)
  return docs and nodeview.endpoint_of_apiserver(docs[1])
end

return M
