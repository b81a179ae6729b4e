-- `config print init-defaults` & co: the defaulted documents as YAML, with kubeadm's
-- placeholders where real values are only known at run time.
local yaml <const> = require "moonadm.yaml"
local C <const> = require "config.constants"
local load <const> = require "config.load"
local defaults <const> = require "config.defaults"

local print_ = {}
local P <const> = C.placeholder

local PLACEHOLDER_FLAGS <const> = {
  init = { flags = { token = P.token, ["apiserver-advertise-address"] = P.advertise_address,
    ["node-name"] = P.node_name, ["cri-socket"] = P.cri_socket } },
  join = { flags = { token = P.token, ["discovery-token-unsafe-skip-ca-verification"] = true,
    ["node-name"] = P.node_name, ["cri-socket"] = P.cri_socket }, args = { P.api_server_endpoint } },
  reset = { flags = { ["cri-socket"] = P.cri_socket } },
  upgrade = { flags = {} },
}
local SLOTS <const> = {
  init = { "init", "cluster" }, join = { "join" }, reset = { "reset" }, upgrade = { "upgrade" },
}

-- Documents ready for yaml.encode: a copy where an unset taint list reads `taints: null`,
-- as kubeadm prints it (the field has no omitempty).
function print_.documents(list)
  local out = {}
  for i, doc in ipairs(list) do
    local d = defaults.copy(doc)
    if d.nodeRegistration and d.nodeRegistration.taints == nil then d.nodeRegistration.taints = yaml.null end
    out[i] = d
  end
  return out
end

-- The defaults of "init"|"join"|"reset"|"upgrade" as multi-document YAML text.
function print_.defaults(command)
  local p = PLACEHOLDER_FLAGS[command]
  if not p then return nil, string.format("unknown defaults %q (init, join, reset or upgrade)", tostring(command)) end
  -- nothing of the user's: what it prints is validated by tests/spec/config_spec.lua, not at every print
  local cfg, err = load.load { kind = command, flags = p.flags, args = p.args, no_host_defaults = true, validate = false }
  if not cfg then return nil, err end
  local docs = {}
  for _, slot in ipairs(SLOTS[command]) do docs[#docs + 1] = cfg[slot] end
  return yaml.encode_all(print_.documents(docs))
end

return print_
