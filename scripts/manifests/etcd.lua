-- The local (stacked) etcd static Pod (kubeadm etcd.GetEtcdPodSpec / getEtcdCommand).
local images = require "config.images"
local args = require "kube.args"
local pod = require "manifests.pod"
local C = require "config.constants"
local nodeview = require "node.view"
local net = require "config.net"

local M = {}

function M.data_dir(cluster)
  local loc = cluster.etcd and cluster.etcd["local"] or {}
  return loc.dataDir or C.etcd_data_dir
end

-- opts.initial_cluster: list of {name, url} for a joining member (default: this node only);
-- opts.existing: --initial-cluster-state=existing (join).
function M.command(ctx, opts)
  opts = opts or {}
  local cl = ctx.cfg.cluster
  local cert = cl.certificatesDir or C.certificates_dir
  local loc = cl.etcd and cl.etcd["local"] or {}
  local adv = nodeview.advertise_address(ctx)
  local name = nodeview.name(ctx)
  local lo = pod.loopback(pod.is_ipv6(adv))
  local peer = net.etcd_peer_url(adv)
  local initial = {}
  for _, m in ipairs(opts.initial_cluster or { { name = name, url = peer } }) do
    initial[#initial + 1] = ("%s=%s"):format(m.name, m.url)
  end
  local d = {
    ["advertise-client-urls"] = net.etcd_client_url(adv),
    ["cert-file"] = cert .. "/etcd/server.crt",
    ["client-cert-auth"] = "true",
    ["data-dir"] = M.data_dir(cl),
    ["feature-gates"] = "InitialCorruptCheck=true",
    ["initial-advertise-peer-urls"] = peer,
    ["initial-cluster"] = table.concat(initial, ","),
    ["key-file"] = cert .. "/etcd/server.key",
    ["listen-client-urls"] = net.etcd_client_url(lo) .. "," .. net.etcd_client_url(adv),
    ["listen-metrics-urls"] = net.url("http", lo, 2381),
    ["listen-peer-urls"] = peer,
    ["name"] = name,
    ["peer-cert-file"] = cert .. "/etcd/peer.crt",
    ["peer-client-cert-auth"] = "true",
    ["peer-key-file"] = cert .. "/etcd/peer.key",
    ["peer-trusted-ca-file"] = cert .. "/etcd/ca.crt",
    ["snapshot-count"] = "10000",
    ["trusted-ca-file"] = cert .. "/etcd/ca.crt",
    ["watch-progress-notify-interval"] = "5s",
  }
  if opts.existing then d["initial-cluster-state"] = "existing" end
  local cmd = args.build(d, loc.extraArgs)
  table.insert(cmd, 1, "etcd")
  return cmd
end

-- The probe endpoint: from listen-metrics-urls (first URL) if the user overrode it.
function M.probe_endpoint(ctx)
  local loc = ctx.cfg.cluster.etcd and ctx.cfg.cluster.etcd["local"] or {}
  local adv = nodeview.advertise_address(ctx)
  local host, port, scheme = pod.loopback(pod.is_ipv6(adv)), 2381, "HTTP"
  local m = args.get(loc.extraArgs, "listen-metrics-urls")
  if m then
    local first = m:match("^[^,]+")
    local sch, rest = first:match("^(%a+)://(.+)$")
    if sch then
      scheme = sch:upper()
      local h, p = rest:match("^%[([^%]]+)%]:(%d+)")
      if not h then h, p = rest:match("^([^:/]+):(%d+)") end
      if not h then h = rest:match("^%[?([^%]/:]+)") end
      if h then host = h end
      port = tonumber(p) or (sch == "https" and 443 or 80)
      if net.classify(host) == "unspecified" then host = pod.loopback(pod.is_ipv6(host)) end
    end
  end
  return host, port, scheme
end

function M.build(ctx, opts)
  local cl = ctx.cfg.cluster
  local cert = cl.certificatesDir or C.certificates_dir
  local loc = cl.etcd and cl.etcd["local"] or {}
  local adv = nodeview.advertise_address(ctx)
  local host, port, scheme = M.probe_endpoint(ctx)
  local mounts = {
    pod.mount("etcd-certs", cert .. "/etcd", cert .. "/etcd", false, "DirectoryOrCreate"),
    pod.mount("etcd-data", M.data_dir(cl), M.data_dir(cl), false, "DirectoryOrCreate"),
  }
  return pod.build {
    name = "etcd",
    image = images.etcd(cl),
    command = M.command(ctx, opts),
    mounts = mounts,
    mount_order = { "etcd-data", "etcd-certs" },
    port = port,
    cpu = "100m",
    memory = "100Mi",
    probes = {
      liveness = pod.probe("liveness", host, "/livez", scheme),
      readiness = pod.probe("readiness", host, "/readyz", scheme),
      startup = pod.probe("startup", host, "/readyz", scheme, pod.health_check_seconds(ctx)),
    },
    annotations = { ["kubeadm.kubernetes.io/etcd.advertise-client-urls"] = net.etcd_client_url(adv) },
    env = pod.env(loc.extraEnvs, true),
  }
end

return M
