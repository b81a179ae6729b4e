-- The kubeadm configs the lab writes for its nodes, as a user would write them: cp1's init config
-- (the user's --config with the node's address and name, the lab's join secrets, endpoint, release,
-- external etcd and feature gates filled in) and a JoinConfiguration per other node; on a
-- real-kubelet lab what its kubelets need on this machine. Both files hold secrets (mode 0600).
local pki = require "moonadm.pki"
local node_start = require "lab.node_start"
local preflight = require "preflight.checks"
local state = require "lab.state"
local yaml = require "moonadm.yaml"

local M = {}

-- The cluster's KubeletConfiguration of a real-kubelet lab, where the user's config leaves a field out:
-- this machine has cgroup v1, which kubelet v1.35 refuses unless failCgroupV1 is false; no systemd
-- (cgroupfs); the images were imported by hand and can never be pulled again, so image garbage
-- collection and disk-pressure eviction must not remove them; swap may be on.
M.REAL_KUBELET_CONFIG = {
  failCgroupV1 = false, cgroupDriver = "cgroupfs", failSwapOn = false,
  imageGCHighThresholdPercent = 100, imageGCLowThresholdPercent = 99,
  evictionHard = { ["memory.available"] = "1Mi", ["nodefs.available"] = "1%", ["imagefs.available"] = "1%",
    ["nodefs.inodesFree"] = "1%" },
}
M.REAL_POD_SUBNET = "10.244.0.0/16"

-- What a real-kubelet lab node needs from its kubeadm config, set as a user would set it:
-- nodeRegistration.kubeletExtraArgs --node-ip (without it the kubelet looks its own name up in DNS on
-- every pod admission, and no DNS answers here), and a kubeletconfiguration patch of its own with its
-- cgroupRoot (the cluster's KubeletConfiguration is one for all nodes; kubelets side by side on one host
-- would garbage-collect each other's pod cgroups). Returns the patches directory.
local function real_node_registration(st, node, reg)
  reg.kubeletExtraArgs = reg.kubeletExtraArgs or {}
  local args = reg.kubeletExtraArgs
  if args[1] == nil and next(args) ~= nil then -- v1beta3's map form
    args["node-ip"] = args["node-ip"] or node.ip
  else
    local has_ip
    for _, a in ipairs(args) do has_ip = has_ip or a.name == "node-ip" end
    if not has_ip then table.insert(args, { name = "node-ip", value = node.ip }) end
  end
  -- On a cgroup v1 host kubeadm's SystemVerification fails for a v1.35 kubelet even with
  -- failCgroupV1=false, and says to skip it explicitly: the lab does, as such a user must.
  if preflight.cgroups() == "v1" then
    reg.ignorePreflightErrors = reg.ignorePreflightErrors or {}
    local has
    for _, e in ipairs(reg.ignorePreflightErrors) do has = has or e == "SystemVerification" or e == "all" end
    if not has then table.insert(reg.ignorePreflightErrors, "SystemVerification") end
  end
  local dir = st.dir .. "/" .. node.name .. "-patches"
  state.write(dir .. "/kubeletconfiguration+strategic.yaml", ("cgroupRoot: /%s\n"):format(node_start.cgroup_name(st, node)),
    "0644", "0755")
  return dir
end

-- The config document of this kind in docs, appended (empty) when there is none.
local function document(docs, kind, api_version)
  for _, d in ipairs(docs) do if d.kind == kind then return d end end
  docs[#docs + 1] = { apiVersion = api_version, kind = kind }
  return docs[#docs]
end

-- The documents of the user's --config file (none without one).
local function user_documents(user_config)
  if not user_config then return {} end
  local f = assert(io.open(user_config, "r"))
  local text = f:read("a")
  f:close()
  local d, err = yaml.decode(text, user_config)
  if not d then error(err, 0) end
  return d
end

-- A real-kubelet lab's own settings, where the user's config leaves them out (REAL_KUBELET_CONFIG,
-- the pod subnet, kube-proxy's conntrack) and the node's patches directory.
local function real_init_documents(st, node, docs, init, cluster)
  local kc = document(docs, "KubeletConfiguration", "kubelet.config.k8s.io/v1beta1")
  for k, v in pairs(M.REAL_KUBELET_CONFIG) do if kc[k] == nil then kc[k] = v end end
  cluster.networking = cluster.networking or {}
  cluster.networking.podSubnet = cluster.networking.podSubnet or M.REAL_POD_SUBNET
  -- kube-proxy runs in a node's network namespace: nf_conntrack_max is the host's, not its to set
  local kp = document(docs, "KubeProxyConfiguration", "kubeproxy.config.k8s.io/v1alpha1")
  kp.conntrack = kp.conntrack or {}
  if kp.conntrack.maxPerCore == nil then kp.conntrack.maxPerCore = 0 end
  if init.patches then
    error("--config: the real-kubelet lab gives each node a patches directory of its own (its cgroupRoot): " ..
      "leave InitConfiguration.patches out, or use --kubelet standin", 0)
  end
  init.patches = { directory = real_node_registration(st, node, init.nodeRegistration) }
end

-- cp1's init config (user_config: the user's --config, or nil; gates: the parsed --feature-gates, or
-- nil), its token and certificate key recorded in st → the file's path.
function M.init(st, node, user_config, gates)
  local docs = user_documents(user_config)
  local init = document(docs, "InitConfiguration", "kubeadm.k8s.io/v1beta4")
  local cluster = document(docs, "ClusterConfiguration", "kubeadm.k8s.io/v1beta4")
  init.localAPIEndpoint = init.localAPIEndpoint or {}
  init.localAPIEndpoint.advertiseAddress = node.ip
  init.nodeRegistration = init.nodeRegistration or {}
  init.nodeRegistration.name = node.name
  init.nodeRegistration.criSocket = init.nodeRegistration.criSocket or "unix:///var/run/containerd/containerd.sock"
  -- The lab knows its join secrets up front, so it can join the other nodes with them.
  init.bootstrapTokens = init.bootstrapTokens or { { token = st.token } }
  st.token = init.bootstrapTokens[1].token or st.token
  init.certificateKey = init.certificateKey or st.certificate_key
  st.certificate_key = init.certificateKey
  if st.endpoint and not cluster.controlPlaneEndpoint then cluster.controlPlaneEndpoint = st.endpoint end
  -- --kubernetes-version over the config's (a config alone keeps its own)
  if st.kubernetes_version then cluster.kubernetesVersion = st.kubernetes_version end
  if st.external and not cluster.etcd then
    cluster.etcd = { external = { endpoints = st.external.endpoints, caFile = "/etc/kubernetes/pki/etcd/ca.crt",
      certFile = "/etc/kubernetes/pki/apiserver-etcd-client.crt", keyFile = "/etc/kubernetes/pki/apiserver-etcd-client.key" } }
  end
  if st.kubelet == "real" then real_init_documents(st, node, docs, init, cluster) end
  if gates and next(gates) then
    cluster.featureGates = cluster.featureGates or {}
    for k, v in pairs(gates) do cluster.featureGates[k] = v end
  end
  local path = st.dir .. "/" .. node.name .. "-init.yaml"
  state.write(path, yaml.encode_all(docs), "0600") -- the bootstrap token and the certificate key
  return path
end

-- A JoinConfiguration for a node: token discovery pinned to cp1's CA; control planes also get the
-- certificate key and their own advertise address. → the file's path.
function M.join(st, node, cp1)
  local f = assert(io.open(cp1.root .. "/etc/kubernetes/pki/ca.crt", "r"))
  local ca = f:read("a")
  f:close()
  local pin = assert(pki.read_cert(ca)):pin()
  local doc = {
    apiVersion = "kubeadm.k8s.io/v1beta4", kind = "JoinConfiguration",
    discovery = { bootstrapToken = { token = st.token, apiServerEndpoint = st.endpoint or (cp1.ip .. ":6443"),
      caCertHashes = { pin } } },
    nodeRegistration = { name = node.name, criSocket = "unix:///var/run/containerd/containerd.sock" },
  }
  if st.kubelet == "real" then doc.patches = { directory = real_node_registration(st, node, doc.nodeRegistration) } end
  if node.role == "control-plane" then
    doc.controlPlane = { localAPIEndpoint = { advertiseAddress = node.ip, bindPort = 6443 },
      certificateKey = st.certificate_key }
  end
  local path = st.dir .. "/" .. node.name .. "-join.yaml"
  state.write(path, yaml.encode(doc), "0600") -- the bootstrap token (and a control plane's certificate key)
  return path
end

return M
