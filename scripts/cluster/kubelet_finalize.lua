-- kubelet-finalize/enable-client-cert-rotation (kubeadm EnableClientCertRotation): once the
-- kubelet has its rotating client certificate (<cert-dir>/kubelet-client-current.pem), kubelet.conf's
-- user points at that file for both certificate and key (embedded data removed), and the kubelet
-- is restarted. Without the file: skip, as kubeadm does.
local yaml = require "moonadm.yaml"
local config = require "config"
local kubeconfig = require "kube.kubeconfig"
local log = require "framework.log"
local runtime_mod = require "runtime"

local M = {}

M.KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
M.CERT_DIR = "/var/lib/kubelet/pki"

function M.cert_dir(ctx)
  local nr = config.node_document(ctx.cfg).nodeRegistration or {}
  local dir
  for _, a in ipairs(nr.kubeletExtraArgs or {}) do
    if type(a) == "table" and a.name == "cert-dir" then dir = a.value end
  end
  return dir or M.CERT_DIR
end

-- kubelet.conf text with the current context's user switched to pem; nil when already so.
function M.rewrite(text, pem)
  local cur, err = kubeconfig.current(text, M.KUBELET_CONF)
  if not cur then error(err, 0) end
  local kc, found = cur.doc, cur.user
  if not found then error(("%s: no user for the current context %q"):format(M.KUBELET_CONF, tostring(kc["current-context"])), 0) end
  local user = found.user or {}
  if user["client-certificate"] == pem and user["client-key"] == pem and not user["client-certificate-data"]
      and not user["client-key-data"] then
    return nil
  end
  user["client-certificate-data"], user["client-key-data"] = nil, nil
  user["client-certificate"], user["client-key"] = pem, pem
  found.user = user
  return yaml.encode(kc)
end

function M.run(ctx)
  local pem = M.cert_dir(ctx) .. "/kubelet-client-current.pem"
  if not ctx:exists(pem) then
    log.info("[kubelet-finalize] Skipping enabling kubelet client certificate rotation: could not find %q", pem)
    return
  end
  log.v(1, "[kubelet-finalize] Assuming that kubelet client certificate rotation is enabled: found %q", pem)
  local text, err = ctx:read(M.KUBELET_CONF)
  if not text then error(("reading %s: %s"):format(M.KUBELET_CONF, err), 0) end
  local new = M.rewrite(text, pem)
  if not new then
    log.v(1, "[kubelet-finalize] %q already points to %q", M.KUBELET_CONF, pem)
    return
  end
  log.info("[kubelet-finalize] Updating %q to point to a rotatable kubelet client certificate and key", M.KUBELET_CONF)
  ctx:write(M.KUBELET_CONF, new, "0600")
  if not ctx.dry_run then
    log.info("[kubelet-finalize] Restarting the kubelet to enable client certificate rotation")
    runtime_mod.for_ctx(ctx).restart_kubelet(ctx)
  end
end

return M
