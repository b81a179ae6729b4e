-- kubeadm feature gates as moonadm accepts them, per Kubernetes minor (config.releases holds each
-- minor's list; the compatibility contract in design.md).
local releases = require "config.releases"

local gates = {}

-- The default release's gates, in the order they are listed to users (--feature-gates help).
gates.known = releases.must(releases.DEFAULT).gates

-- Gates kubeadm removed before every minor moonadm speaks: using one is an error that says what
-- happened to it. (Gates a later minor removed are in that minor's record.)
gates.removed = {
  EtcdLearnerMode = "was removed in kubeadm v1.33: its behaviour is now always on "
    .. "(new etcd members always join as learners and are then promoted)",
  WaitForAllControlPlaneComponents = "was removed in kubeadm v1.35: its behaviour is now always on "
    .. "(the control-plane wait always checks every component)",
  RootlessControlPlane = "was removed in kubeadm v1.35 "
    .. "(control-plane components no longer run as dedicated non-root users)",
  IPv6DualStack = "was removed in kubeadm v1.24: dual-stack is always available",
  UnversionedKubeletConfigMap = "was removed in kubeadm v1.26: the ConfigMap is always \"kubelet-config\"",
  UpgradeAddonsBeforeControlPlane = "was removed in kubeadm v1.31",
}

-- Removed gates whose behaviour stayed, on: a minor without the gate behaves as if it were true.
local ALWAYS_ON <const> = { ControlPlaneKubeletLocalMode = true, NodeLocalCRISocket = true }

-- Did the gate's behaviour stay, on, in the minors that removed it?
function gates.stays_on(name) return ALWAYS_ON[name] == true end

local function find(list, name)
  for _, g in ipairs(list) do if g.name == name then return g end end
end

local function valid_list(list)
  local names = {}
  for _, g in ipairs(list) do names[#names + 1] = g.name end
  return #names > 0 and table.concat(names, ", ") or "(none)"
end

-- Is the gate known to any minor moonadm speaks? (The config's decoding does not know the
-- cluster's version yet; validation then checks against that minor with gates.check.)
function gates.check_any(name)
  if gates.removed[name] then
    return nil, string.format("feature gate %q %s; remove it", name, gates.removed[name])
  end
  for m = releases.OLDEST, releases.NEWEST do
    if find(releases.must("v1." .. m .. ".0").gates, name) then return true end
  end
  return nil, string.format("unknown feature gate %q; valid feature gates are: %s", name, valid_list(gates.known))
end

-- Check one gate setting for a cluster of the given Kubernetes version (nil: the default release):
-- returns nil, error for a gate that minor's kubeadm refuses, or true plus an optional warning.
function gates.check(name, value, version)
  local r = releases.of(version) or releases.must(releases.DEFAULT)
  local gone = gates.removed[name] or r.removed_gates[name]
  if gone then
    return nil, string.format("feature gate %q %s; remove it", name, gone)
  end
  if not find(r.gates, name) then
    return nil, string.format("unknown feature gate %q; valid feature gates for Kubernetes v1.%d are: %s", name,
      r.minor, valid_list(r.gates))
  end
  if name == "ControlPlaneKubeletLocalMode" and value == false then
    return true, "ControlPlaneKubeletLocalMode=false is a moonadm experiment (the old join order): "
      .. "kubeadm v1.35 does not accept it, as the gate is GA and locked on there; "
      .. "it is never written to the cluster"
  end
  if name == "PublicKeysECDSA" then
    return true, "feature gate PublicKeysECDSA is deprecated and will be removed when v1beta3 is removed. "
      .. "v1beta4 supports a new option 'ClusterConfiguration.EncryptionAlgorithm'"
  end
  return true
end

-- The effective value of every gate for a ClusterConfiguration (or nil: defaults): the gates of
-- its minor, and those its minor removed but kept on (true).
function gates.effective(cluster)
  local set = cluster and cluster.featureGates or {}
  local r = releases.of(cluster and cluster.kubernetesVersion) or releases.must(releases.DEFAULT)
  local out = {}
  for _, g in ipairs(r.gates) do
    local v = set[g.name]
    if v == nil then v = g.default end
    out[g.name] = v
  end
  for name in pairs(r.removed_gates) do if ALWAYS_ON[name] then out[name] = true end end
  return out
end

-- Go's strconv.ParseBool
local BOOLS <const> = {
  ["1"] = true, t = true, T = true, TRUE = true, ["true"] = true, True = true,
  ["0"] = false, f = false, F = false, FALSE = false, ["false"] = false, False = false,
}

-- Parse the --feature-gates syntax "A=true,B=false": a map name -> bool, or nil, error.
function gates.parse(text)
  if type(text) ~= "string" then return nil, "expected a string like \"Name=true,Other=false\"" end
  local out = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    item = item:match("^%s*(.-)%s*$")
    if item ~= "" then
      local k, v = item:match("^([^=]*)=(.*)$")
      if not k then
        return nil, string.format("missing bool value for feature-gate key %q (use %s=true|false)", item, item)
      end
      k, v = k:match("^%s*(.-)%s*$"), v:match("^%s*(.-)%s*$")
      local ok, err = gates.check_any(k)
      if not ok then return nil, err end
      local b = BOOLS[v]
      if b == nil then
        return nil, string.format("invalid value %q for feature-gate key %q, use true|false instead", v, k)
      end
      out[k] = b
    end
  end
  return out
end

return gates
