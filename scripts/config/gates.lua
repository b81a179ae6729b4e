-- kubeadm feature gates as moonadm accepts them (the compatibility contract in design.md).
local gates = {}

-- The accepted gates, in the order they are listed to users.
gates.known = {
  { name = "ControlPlaneKubeletLocalMode", default = true, stage = "GA" },
  { name = "NodeLocalCRISocket", default = true, stage = "beta" },
  { name = "PublicKeysECDSA", default = false, stage = "deprecated" },
}
local by_name <const> = {}
for _, g in ipairs(gates.known) do by_name[g.name] = g end

-- Gates kubeadm removed: using one is an error that says what happened to it.
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

local function valid_list()
  local names = {}
  for _, g in ipairs(gates.known) do names[#names + 1] = g.name end
  return table.concat(names, ", ")
end

-- Check one gate setting: returns nil, error for a gate that is refused,
-- or true plus an optional warning.
function gates.check(name, value)
  if gates.removed[name] then
    return nil, string.format("feature gate %q %s; remove it", name, gates.removed[name])
  end
  local g = by_name[name]
  if not g then
    return nil, string.format("unknown feature gate %q; valid feature gates are: %s", name, valid_list())
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

-- The effective value of every accepted gate for a ClusterConfiguration (or nil: defaults).
function gates.effective(cluster)
  local set = cluster and cluster.featureGates or {}
  local out = {}
  for _, g in ipairs(gates.known) do
    local v = set[g.name]
    if v == nil then v = g.default end
    out[g.name] = v
  end
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
      local ok, err = gates.check(k)
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
