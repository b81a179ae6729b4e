-- The kubeadm.k8s.io/v1beta4 configuration: `require "config"`.
local lazy = require "framework.lazy"
local yaml <const> = require "moonadm.yaml"
local C <const> = require "config.constants"
local load <const> = require "config.load"
local gates <const> = require "config.gates"
local print_ <const> = lazy.require "config.print"
local duration <const> = require "config.duration"
local defaults <const> = require "config.defaults"

local config = {}

config.constants = C

--[[ config.load{files=, text=, filename=, flags=, args=, kind=, strict=, no_host_defaults=}
→ cfg | nil, message, warnings. See docs/config.md for the shape of cfg. ]]
config.load = load.load

-- The node name kubeadm defaults to (the host name, lowercased) | nil, message.
config.node_name_default = load.node_name_default

-- Effective value of every accepted feature gate for a ClusterConfiguration (nil: defaults).
config.feature_gates = gates.effective

-- Parse the --feature-gates syntax "A=true,B=false" → {A=true, B=false} | nil, message.
config.parse_feature_gates = gates.parse

-- Check one gate (name, value, Kubernetes version): true [, warning] | nil, message.
config.check_feature_gate = gates.check
config.gate_stays_on = gates.stays_on

-- Defaults of "init"|"join"|"reset"|"upgrade" as YAML text | nil, message. (A function, not
-- print_.defaults itself: reading the field would load config.print with this module.)
function config.print_defaults(kind) return print_.defaults(kind) end

-- Seconds of a Go duration text ("4m0s" → 240.0) | nil.
config.duration_seconds = duration.seconds

-- The ClusterConfiguration as it may be written to the cluster (kubeadm-config): a copy
-- without the moonadm-only ControlPlaneKubeletLocalMode=false, which kubeadm v1.35 refuses.
function config.cluster_for_upload(cluster)
  local c = defaults.copy(cluster)
  local fg = c.featureGates
  if fg and fg.ControlPlaneKubeletLocalMode == false then
    fg.ControlPlaneKubeletLocalMode = nil
    if next(fg) == nil then c.featureGates = nil end
  end
  return c
end

-- A ClusterConfiguration read back from the cluster (the kubeadm-config ConfigMap's
-- ClusterConfiguration text): defaulted and validated → cluster, warnings | nil, message.
-- The running command's document for this node: a join's JoinConfiguration, else the
-- InitConfiguration (init's own; upgrade's view of this node), else an empty one (reset).
function config.node_document(cfg)
  cfg = cfg or {}
  return cfg.join or cfg.init or {}
end

-- The certificates dir of a ClusterConfiguration (kubeadm's default when unset), without a trailing slash.
function config.cert_dir(cluster)
  local d = cluster and cluster.certificatesDir
  if not d or d == "" then d = C.certificates_dir end
  return (d:gsub("(.)/+$", "%1"))
end

function config.load_cluster(text, source)
  source = source or "kubeadm-config"
  local cfg, err = load.load { text = text, filename = source, no_host_defaults = true }
  if not cfg then return nil, err end
  if not cfg.cluster then return nil, source .. ": no ClusterConfiguration found" end
  return cfg.cluster, cfg.warnings
end

-- The YAML text of a ClusterConfiguration for the kubeadm-config ConfigMap.
function config.encode_cluster(cluster)
  return yaml.encode(config.cluster_for_upload(cluster))
end

-- The key algorithm of a cluster: PublicKeysECDSA (deprecated) still means ECDSA-P256.
function config.encryption_algorithm(cluster)
  if cluster.featureGates and cluster.featureGates.PublicKeysECDSA then return "ECDSA-P256" end
  return cluster.encryptionAlgorithm or C.encryption_algorithm
end

return config
