-- The node view: who this node is, resolved once per run into ctx.node and read by everything
-- else (certificates, kubeconfigs, manifests, preflight, the kubelet, etcd, addons, upgrade).
--   From the running command's config: the advertise address (the init's localAPIEndpoint, a
--   control-plane join's controlPlane.localAPIEndpoint, else the default route's source address
--   through the engine's primitive), the bind port, the node name, whether it is a control plane,
--   and the URLs built from them (host:port with IPv6 brackets, the local and the control-plane
--   endpoint).
--   From what the node runs (reset, upgrade): the name in kubelet.conf's client certificate, the
--   advertise address and port of the local kube-apiserver manifest.
local C = require "config.constants"
local config = require "config"
local lazy = require "framework.lazy"
-- what the node runs is read by reset and upgrade only: init and join do not load the API client
local kubeconfig <const> = lazy.require "kube.kubeconfig"
local args = require "kube.args"
local log = require "framework.log"
local mnet = require "moonadm.net"
local net = require "config.net"
local pki = require "moonadm.pki"

local M = {}

M.KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
M.APISERVER_MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml"
M.ENDPOINT_ANNOTATION = "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"

local function view(ctx)
  ctx.node = ctx.node or {}
  return ctx.node
end

-- The localAPIEndpoint the command's config gives this node (join: its controlPlane's). create:
-- make it in the config when absent (for the dynamic default), where there is a config to hold it.
local function endpoint_cfg(ctx, create)
  local cfg = ctx.cfg or {}
  local holder = cfg.join and cfg.join.controlPlane or (not cfg.join and cfg.init) or nil
  if not holder then return {} end
  if not holder.localAPIEndpoint and create then holder.localAPIEndpoint = {} end
  return holder.localAPIEndpoint or {}
end

-- https://host:port of an API server, IPv6 in brackets.
function M.url(host, port) return net.url("https", host, port) end

function M.is_control_plane(ctx)
  local cfg = ctx.cfg or {}
  if cfg.join then return cfg.join.controlPlane ~= nil end
  return true
end

-- Does this node run a control plane now (its kube-apiserver manifest is here)? What upgrade asks.
function M.runs_control_plane(ctx) return ctx:exists(M.APISERVER_MANIFEST) end

-- (read each time: a site phase may rename the node before the phases that use the name)
function M.name(ctx)
  local doc = config.node_document(ctx.cfg)
  local n = doc.nodeRegistration and doc.nodeRegistration.name
  if not n or n == "" then n = config.node_name_default() end
  return n
end

-- The default route's source address (kubeadm's ChooseAPIServerBindAddress): ip | nil, why (none,
-- or not a global unicast address).
function M.default_address()
  local addr, err = mnet.default_ip()
  if not addr then return nil, err end
  if net.classify(addr) ~= "global-unicast" then return nil, addr .. " is not a global unicast address" end
  return addr
end

-- The configured advertise address, else the default route's, written into the config as kubeadm's
-- dynamic defaulting does (so the journal's inputs see it: a changed address re-runs the phases).
function M.advertise_address(ctx)
  local v = view(ctx)
  if v.advertise_address then return v.advertise_address end
  local addr = endpoint_cfg(ctx).advertiseAddress
  if addr and addr ~= "" then
    if not net.parse_ip(addr) then
      error(("localAPIEndpoint.advertiseAddress %q is not a valid IP address"):format(addr), 0)
    end
  else
    local why
    addr, why = M.default_address()
    if not addr then
      error(("could not detect the node's IP address from the default route (%s): set it with " ..
        "--apiserver-advertise-address or localAPIEndpoint.advertiseAddress"):format(tostring(why)), 0)
    end
    log.v(1, "[endpoint] detected advertise address %s from the default route", addr)
    endpoint_cfg(ctx, true).advertiseAddress = addr
  end
  v.advertise_address = addr
  return addr
end

function M.bind_port(ctx) return endpoint_cfg(ctx).bindPort or C.api_bind_port end

-- https://<advertise>:<bindPort>: this node's own kube-apiserver.
function M.local_url(ctx) return M.url(M.advertise_address(ctx), M.bind_port(ctx)) end

-- The control-plane endpoint URL: controlPlaneEndpoint (its port, else bindPort), or the local URL.
function M.cpe_url(ctx)
  local cpe = ((ctx.cfg or {}).cluster or {}).controlPlaneEndpoint
  local port = M.bind_port(ctx)
  if not cpe or cpe == "" then return M.local_url(ctx) end
  local host, p = net.split_host_port(cpe)
  if not host then error(("invalid controlPlaneEndpoint %q: %s"):format(cpe, p), 0) end
  if p and p ~= port then
    log.warn("[endpoint] port specified in controlPlaneEndpoint overrides bindPort in the controlplane address")
  end
  return M.url(host, p or port)
end

---------------------------------------------------------------------------------------------------
-- From what the node runs

-- The node name in a kubelet.conf's client certificate (CN system:node:NAME): embedded data or a
-- file it names (relative paths against /etc/kubernetes). text: the kubeconfig; read(path) reads a
-- file. nil when there is none.
function M.name_from_kubelet_conf(text, read)
  if not text then return nil end
  local opts = kubeconfig.parse(text, { filename = M.KUBELET_CONF, base_dir = "/etc/kubernetes", read = read })
  local cert = opts and opts.cert_pem and pki.read_cert(opts.cert_pem)
  local info = cert and cert:info()
  local cn = info and info.subject and info.subject.cn
  return cn and cn:match("^system:node:(.+)$")
end

-- The local kube-apiserver's endpoint in its decoded manifest, {advertiseAddress, bindPort}: its
-- --advertise-address and --secure-port as the kube-apiserver parses them (nil without an address).
function M.endpoint_of_apiserver(pod)
  local c = pod and pod.spec and pod.spec.containers and pod.spec.containers[1]
  if not c then return nil end
  local adv = args.of_container(c, "advertise-address")
  return adv and { advertiseAddress = adv, bindPort = tonumber(args.of_container(c, "secure-port") or "") or C.api_bind_port }
end

-- The advertise address a node being reset had: its kube-apiserver mirror pod's annotation
-- (kubeadm's getAPIEndpoint), else the local kube-apiserver manifest, else the local etcd
-- manifest's advertised peer URL. read(name) gives a decoded manifest. Returns address, source.
function M.advertise_address_on_disk(client, name, read)
  if client and name then
    local pod, err = client:get { apiVersion = "v1", kind = "Pod", namespace = "kube-system", name = "kube-apiserver-" .. name }
    if not pod and err.code ~= 404 then
      log.warn("[reset] Could not read Pod kube-system/kube-apiserver-%s, using the local manifests for the advertise address: %s",
        name, tostring(err))
    end
    local ann = pod and pod.metadata and pod.metadata.annotations and pod.metadata.annotations[M.ENDPOINT_ANNOTATION]
    local host = ann and net.split_host_port(ann)
    if host then return host, "the kube-apiserver-" .. name .. " pod" end
  end
  local api = read("kube-apiserver")
  if api then
    local ann = api.metadata and api.metadata.annotations and api.metadata.annotations[M.ENDPOINT_ANNOTATION]
    local c = api.spec and api.spec.containers and api.spec.containers[1] or {}
    local host = (ann and net.split_host_port(ann)) or args.of_container(c, "advertise-address")
    if host then return host, M.APISERVER_MANIFEST end
  end
  local etcd = read("etcd")
  local c = etcd and etcd.spec and etcd.spec.containers and etcd.spec.containers[1] or {}
  local peer = args.of_container(c, "initial-advertise-peer-urls")
  local host = peer and net.url_host(peer)
  if host then return host, "/etc/kubernetes/manifests/etcd.yaml" end
  return nil
end

return M
