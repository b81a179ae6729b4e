-- The kube-controller-manager static Pod (kubeadm getControllerManagerCommand).
local images = require "config.images"
local args = require "kube.args"
local pod = require "manifests.pod"
local fs = require "moonadm.fs"
local C = require "config.constants"
local releases = require "config.releases"
local config_net = require "config.net"

local M = {}

M.KUBECONFIG = "/etc/kubernetes/controller-manager.conf"
M.FLEXVOLUME_DIR = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"

-- The address the component's probes use: bind-address from extraArgs; none (the kubelet probes the
-- pod's IP, the host's on hostNetwork) when it is unspecified, as kubeadm's getProbeAddress (checked
-- against the reference kubeadm v1.35.4).
function M.probe_host(extra)
  local b = args.get(extra, "bind-address")
  if not b or b == "" then return "127.0.0.1" end
  if config_net.classify(b) == "unspecified" then return nil end
  return b
end

function M.command(ctx)
  local cl = ctx.cfg.cluster
  local cert = cl.certificatesDir or C.certificates_dir
  local extra = cl.controllerManager and cl.controllerManager.extraArgs
  local d = {
    ["authentication-kubeconfig"] = M.KUBECONFIG,
    ["authorization-kubeconfig"] = M.KUBECONFIG,
    ["bind-address"] = "127.0.0.1",
    ["client-ca-file"] = cert .. "/ca.crt",
    ["cluster-signing-cert-file"] = cert .. "/ca.crt",
    ["cluster-signing-key-file"] = cert .. "/ca.key",
    ["controllers"] = "*,bootstrapsigner,tokencleaner",
    ["kubeconfig"] = M.KUBECONFIG,
    ["leader-elect"] = "true",
    ["requestheader-client-ca-file"] = cert .. "/front-proxy-ca.crt",
    ["root-ca-file"] = cert .. "/ca.crt",
    ["service-account-private-key-file"] = cert .. "/sa.key",
    ["use-service-account-credentials"] = "true",
  }
  if cl.clusterName and cl.clusterName ~= "" then d["cluster-name"] = cl.clusterName end
  -- External CA mode: the CA certificate is there, its key is not; the controller-manager signs nothing.
  if fs.exists(cert .. "/ca.crt") and not fs.exists(cert .. "/ca.key") then
    d["cluster-signing-cert-file"], d["cluster-signing-key-file"] = "", ""
  end
  local net = cl.networking or {}
  if net.podSubnet and net.podSubnet ~= "" then
    d["allocate-node-cidrs"] = "true"
    d["cluster-cidr"] = net.podSubnet
    if net.serviceSubnet and net.serviceSubnet ~= "" then d["service-cluster-ip-range"] = net.serviceSubnet end
  end
  local cmd = args.build(d, extra)
  table.insert(cmd, 1, "kube-controller-manager")
  return cmd
end

function M.build(ctx)
  local cl = ctx.cfg.cluster
  local cert = cl.certificatesDir or C.certificates_dir
  local extra = cl.controllerManager and cl.controllerManager.extraArgs
  local host = M.probe_host(extra)
  local mounts = pod.ca_mounts()
  mounts[#mounts + 1] = pod.mount("k8s-certs", cert, cert, true, "DirectoryOrCreate")
  mounts[#mounts + 1] = pod.mount("kubeconfig", M.KUBECONFIG, M.KUBECONFIG, true, "FileOrCreate")
  if releases.must(cl.kubernetesVersion).kcm_flexvolume then -- kubeadm v1.36 dropped it
    local flex = args.get(extra, "flex-volume-plugin-dir") or M.FLEXVOLUME_DIR
    mounts[#mounts + 1] = pod.mount("flexvolume-dir", flex, flex, false, "DirectoryOrCreate")
  end
  for _, m in ipairs(pod.extra_mounts(cl.controllerManager and cl.controllerManager.extraVolumes)) do
    mounts[#mounts + 1] = m
  end
  local port = tonumber(args.get(extra, "secure-port")) or 10257
  return pod.build {
    name = "kube-controller-manager",
    image = images.component(cl, "kube-controller-manager"),
    command = M.command(ctx),
    mounts = mounts,
    port = port,
    cpu = "200m",
    probes = {
      liveness = pod.probe("liveness", host, "/healthz", "HTTPS"),
      startup = pod.probe("startup", host, "/healthz", "HTTPS", pod.health_check_seconds(ctx)),
    },
    env = pod.env(cl.controllerManager and cl.controllerManager.extraEnvs),
  }
end

return M
