-- The kubelet side of a join: bootstrap-kubelet.conf (its server rewritten to this node's own
-- kube-apiserver for a control plane under ControlPlaneKubeletLocalMode), the CA, the kubelet files
-- from the cluster's kubelet-config, (re)starting the kubelet, and waiting for its TLS bootstrap.
-- The domain modules load on first use: a flow check (`moonadm phases join`) asks local_server and
-- local_etcd only.
local core = require "moonadm.core"
local lazy = require "framework.lazy"
local capi = lazy.require "cluster.api"
local cnode = lazy.require "cluster.node"
local config = require "config"
local discovery = lazy.require "cluster.discovery"
local duration = require "config.duration"
local fs = require "moonadm.fs"
local kubelet = lazy.require "kubelet"
local healthz = lazy.require "kubelet.healthz"
local kubeconfig = lazy.require "kube.kubeconfig"
local log = require "framework.log"
local runtime = lazy.require "runtime"
local yaml = require "moonadm.yaml"
local nodeview = require "node.view"
local pki = require "moonadm.pki"

local M = {}

M.BOOTSTRAP = "/etc/kubernetes/bootstrap-kubelet.conf"
M.KUBELET_CONF = "/etc/kubernetes/kubelet.conf"

local function timeout(ctx, name, default)
  local t = (ctx.cfg.join.timeouts or {})[name]
  return (t and config.duration_seconds(t)) or default
end

-- Does this join's kubelet talk to its own local kube-apiserver (KEP-4471)? For a control plane:
-- yes under ControlPlaneKubeletLocalMode, unless `--kubelet-server endpoint|local` (a moonadm
-- experiment) says otherwise.
function M.local_server(ctx)
  if not nodeview.is_control_plane(ctx) then return false end
  local choice = ctx.flags and ctx.flags["kubelet-server"]
  if choice == "local" then return true end
  if choice == "endpoint" then return false end
  return ctx:gate("ControlPlaneKubeletLocalMode")
end

-- Does this node run a local (stacked) etcd member?
function M.local_etcd(ctx)
  local cluster = ctx.cfg and ctx.cfg.cluster or {}
  return nodeview.is_control_plane(ctx) and not (cluster.etcd or {}).external
end

-- Does this machine's kubelet hold a client certificate of system:node:NAME signed by the cluster CA?
function M.holds_identity(ctx, name, ca_pem)
  local pem = ctx:read("/var/lib/kubelet/pki/kubelet-client-current.pem")
  local cert = pem and pki.read_cert(pem)
  local ca = ca_pem and pki.read_cert(ca_pem)
  if not (cert and ca) then return false end
  local info = cert:info()
  return info.subject and info.subject.cn == "system:node:" .. name and cert:verify(ca) == true
end

function M.start(ctx)
  local r = ctx.data.discovery or error("[kubelet-start] no discovery result: run the whole join flow", 0)
  local cluster = ctx.cfg.cluster
  local server = r.server
  if M.local_server(ctx) then server = nodeview.local_url(ctx) end
  local kc = discovery.bootstrap_kubeconfig(r, cluster.clusterName or "kubernetes", server)
  ctx:write(M.BOOTSTRAP, yaml.encode(kc), "0600")
  local ca_path = ctx.cfg.join.caCertPath or "/etc/kubernetes/pki/ca.crt"
  if not ctx:exists(ca_path) then ctx:write(ca_path, r.ca_pem, "0644") end
  -- A Ready Node with this name means another machine already is this node, unless this
  -- machine's kubelet holds that node's identity: a run killed after bootstrap-kubelet.conf was
  -- written leaves a kubelet that bootstraps and registers the Node before the run is resumed.
  local name = nodeview.name(ctx)
  local node, nerr = ctx.data.bootstrap_client:get { apiVersion = "v1", kind = "Node", name = name }
  if not node and nerr.code ~= 404 then
    error(("[kubelet-start] cannot get Node %q: %s"):format(name, tostring(nerr)), 0)
  end
  if node and M.holds_identity(ctx, name, r.ca_pem) then
    log.info("[kubelet-start] The Node %q is this machine's: its kubelet already holds the node's client certificate", name)
    node = nil
  end
  if node then
    for _, c in ipairs(node.status and node.status.conditions or {}) do
      if c.type == "Ready" and c.status == "True" then
        error(("a Node with name %q and status \"Ready\" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node"):format(name), 0)
      end
    end
  end
  local rt = runtime.for_ctx(ctx)
  if not ctx.dry_run then rt.stop_kubelet(ctx) end
  kubelet.write_files(ctx, { taints_as_flags = not nodeview.is_control_plane(ctx) })
  log.info("[kubelet-start] Starting the kubelet")
  if not ctx.dry_run then rt.start_kubelet(ctx) end
end

-- kubeadm's kubelet-wait-bootstrap: kubelet healthz (kubelet/healthz.lua), then a usable kubelet.conf,
-- then the bootstrap kubeconfig goes.
function M.wait_bootstrap(ctx)
  if ctx.dry_run then
    log.info("[dryrun] Would wait for the kubelet's TLS bootstrap")
    return
  end
  local rt = runtime.for_ctx(ctx)
  healthz.wait(ctx, rt, timeout(ctx, "kubeletHealthCheck", 240), duration.format_seconds)
  -- kubeadm's line, with the timeout it waits (cfg.timeouts.tlsBootstrap) and the elapsed time after
  local tls = timeout(ctx, "tlsBootstrap", 300)
  log.info("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap. This can take up to %s",
    duration.format_seconds(tls))
  local t0 = core.monotonic()
  while true do
    local text = fs.read(M.KUBELET_CONF)
    if text then
      local opts = kubeconfig.parse(text, { filename = M.KUBELET_CONF, read = function(p) return fs.read(p) end })
      if opts and (opts.cert_pem or opts.token) then break end
    end
    if core.monotonic() - t0 > tls then
      error(("[kubelet-start] timed out after %s waiting for the kubelet to perform the TLS Bootstrap (no usable %s)")
        :format(duration.format_seconds(tls), M.KUBELET_CONF), 0)
    end
    core.sleep(healthz.INTERVAL) -- as often as the health wait: a 0.25 s poll added ~0.13 s to a join on average
  end
  log.info("[kubelet-start] The kubelet performed the TLS Bootstrap after %s", duration.format_seconds(core.monotonic() - t0))
  fs.remove(M.BOOTSTRAP)
  if not ctx:gate("NodeLocalCRISocket") then M.annotate_cri_socket(ctx) end
end

-- With the node's own kubelet.conf, as kubeadm: the kubelet registers its Node some time after
-- the TLS bootstrap, so cluster.node waits for it and the join fails if it never takes the annotation.
function M.annotate_cri_socket(ctx)
  local c = capi.from_kubeconfig(ctx, M.KUBELET_CONF)
  local ok, err = pcall(cnode.annotate_cri_socket, ctx, c, "[kubelet-start]")
  c:close()
  if not ok then error("[kubelet-start] error writing CRISocket for this node: " .. tostring(err), 0) end
end

return M
