-- The Kubernetes minors moonadm speaks, each as its own kubeadm release makes it: the pins and
-- rules that change from one minor to the next live here and nowhere else (the compatibility
-- contract in docs/compatibility.md lists them). A cluster's minor is its kubernetesVersion's; a
-- minor just below the oldest is made as the oldest's kubeadm makes it (kubeadm deploys N-1).
-- Pure data and lookups: nothing here is fetched.
local M = {}

-- The release a config without kubernetesVersion gets, and the lab builds by default.
M.DEFAULT = "v1.35.4"

--[[ One record per minor: latest (the newest patch release moonadm knows), etcd / coredns / pause
image tags, etcd_for (kubeadm's SupportedEtcdVersion: the etcd image for a control plane of minor
N), v1beta3 (is the kubeadm.k8s.io/v1beta3 config API still read), gates (the kubeadm feature gates
that release accepts, with default and stage), removed_gates (gate -> what became of it), and what
that kubeadm writes differently: kcm_flexvolume (kube-controller-manager's flexvolume-dir mount),
kubelet_client_admins (apiserver-kubelet-client in O=kubeadm:cluster-admins), kubelet_api_admin (the
kubeadm:apiserver-kubelet-client ClusterRoleBinding to system:kubelet-api-admin, made by init's
and upgrade apply's bootstrap-token phase), proxy_mode (kube-proxy's mode when the config sets none). ]]
local LOCAL_MODE_REMOVED <const> = "was removed in kubeadm v1.36: its behaviour is now always on "
  .. "(a joining control plane's kubelet talks to its own API server)"

local MINORS <const> = {
  [35] = {
    latest = "v1.35.4", etcd = "3.6.6-0", coredns = "v1.13.1", pause = "3.10.1",
    etcd_for = { [33] = "3.5.24-0", [34] = "3.6.6-0", [35] = "3.6.6-0" },
    v1beta3 = true, kcm_flexvolume = true, kubelet_client_admins = true, kubelet_api_admin = false, proxy_mode = "",
    gates = {
      { name = "ControlPlaneKubeletLocalMode", default = true, stage = "GA" },
      { name = "NodeLocalCRISocket", default = true, stage = "beta" },
      { name = "PublicKeysECDSA", default = false, stage = "deprecated" },
    },
    removed_gates = {},
  },
  [36] = {
    latest = "v1.36.3", etcd = "3.6.8-0", coredns = "v1.14.2", pause = "3.10.2",
    etcd_for = { [34] = "3.6.8-0", [35] = "3.6.8-0", [36] = "3.6.8-0" },
    v1beta3 = true, kcm_flexvolume = false, kubelet_client_admins = false, kubelet_api_admin = true, proxy_mode = "",
    gates = {
      { name = "NodeLocalCRISocket", default = true, stage = "GA" },
      { name = "PublicKeysECDSA", default = false, stage = "deprecated" },
    },
    removed_gates = {
      ControlPlaneKubeletLocalMode = LOCAL_MODE_REMOVED,
    },
  },
  [37] = {
    latest = "v1.37.2", etcd = "3.7.0-0", coredns = "v1.14.6", pause = "3.10.2",
    etcd_for = { [34] = "3.7.0-0", [35] = "3.7.0-0", [36] = "3.7.0-0" },
    v1beta3 = false, kcm_flexvolume = false, kubelet_client_admins = false, kubelet_api_admin = true,
    proxy_mode = "iptables",
    gates = {},
    removed_gates = {
      ControlPlaneKubeletLocalMode = LOCAL_MODE_REMOVED,
      NodeLocalCRISocket = "was removed in kubeadm v1.37: its behaviour is now always on "
        .. "(the CRI socket is in each node's /var/lib/kubelet/instance-config.yaml)",
      PublicKeysECDSA = "was removed in kubeadm v1.37 with the v1beta3 API: "
        .. "set ClusterConfiguration.encryptionAlgorithm instead",
    },
  },
}
M.OLDEST, M.NEWEST = 35, 37

-- Supported minors, oldest first: {"v1.35", "v1.36", "v1.37"}.
function M.supported()
  local out = {}
  for m = M.OLDEST, M.NEWEST do out[#out + 1] = ("v1.%d"):format(m) end
  return out
end

-- "v1.36.3" -> 36 | nil
function M.minor_of(version)
  local maj, min = tostring(version or ""):match("^v?(%d+)%.(%d+)")
  if maj ~= "1" then return nil end
  return tonumber(min)
end

-- The record for a Kubernetes version, with minor (the cluster's) set; nil, message for a minor
-- moonadm does not speak. The minor just below the oldest (kubeadm's N-1) gets the oldest's record.
function M.of(version)
  local minor = M.minor_of(version or M.DEFAULT)
  local rec = minor and (MINORS[minor] or (minor == M.OLDEST - 1 and MINORS[M.OLDEST]))
  if not rec then
    return nil, ("Kubernetes %s is not supported: moonadm makes clusters of %s (and %s control planes as kubeadm "
      .. "v1.%d does); use a supported kubernetesVersion"):format(tostring(version), table.concat(M.supported(), ", "),
      ("v1.%d"):format(M.OLDEST - 1), M.OLDEST)
  end
  return setmetatable({ minor = minor }, { __index = rec })
end

-- of(), raising the message: for code paths whose config has been validated.
function M.must(version)
  local r, err = M.of(version)
  if not r then error(err, 0) end
  return r
end

-- The etcd image tag this release's kubeadm deploys for a control plane of the given version: its
-- SupportedEtcdVersion entry, else the nearest entry's (kubeadm's EtcdSupportedVersion, which logs that
-- at -v 1 only). r.etcd is that kubeadm's DefaultEtcdVersion, for the record.
function M.etcd_tag(version)
  local r = M.must(version)
  if r.etcd_for[r.minor] then return r.etcd_for[r.minor] end
  local lo, hi = math.huge, -1
  for m in pairs(r.etcd_for) do lo, hi = math.min(lo, m), math.max(hi, m) end
  return r.etcd_for[r.minor < lo and lo or hi]
end

-- The newest release moonadm knows ("the kubeadm version" of skew rules).
function M.newest() return MINORS[M.NEWEST].latest end

-- The newest known release of a minor | nil.
function M.latest_of(minor) return MINORS[minor] and MINORS[minor].latest end

return M
