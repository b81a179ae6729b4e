-- Component command lines as kubeadm builds them (kubeadmutil.ArgumentsToCommand): the defaults,
-- minus every name the user's extraArgs set, sorted by name; then all of extraArgs (a name may
-- repeat) in the order the user gave them; each rendered "--name=value". (So the reference kubeadm
-- v1.35.4 writes them: tests/proc/differential_spec.lua, config fixtures/diff/extra.yaml.)
local M = {}

-- defaults: {name = value} map; extra: v1beta4 list of {name=, value=} (may be nil).
-- Returns the argument list (without the binary name).
function M.build(defaults, extra)
  local base, over, overridden = {}, {}, {}
  for _, a in ipairs(extra or {}) do
    overridden[a.name] = true
    over[#over + 1] = { name = a.name, value = a.value == nil and "" or tostring(a.value) }
  end
  for name, value in pairs(defaults) do
    if not overridden[name] then base[#base + 1] = { name = name, value = tostring(value) } end
  end
  local function by_name_value(a, b)
    if a.name == b.name then return a.value < b.value end
    return a.name < b.name
  end
  table.sort(base, by_name_value)
  local out = {}
  for _, a in ipairs(base) do out[#out + 1] = ("--%s=%s"):format(a.name, a.value) end
  for _, a in ipairs(over) do out[#out + 1] = ("--%s=%s"):format(a.name, a.value) end
  return out
end

-- The last value of an extraArgs name, or nil (kubeadm's GetArgValue(args, name, -1)).
function M.get(extra, name)
  local v
  for _, a in ipairs(extra or {}) do
    if a.name == name then v = a.value end
  end
  return v
end

-- Parses a command line back ("--a=b" items) into {name = value} (last wins): for tests and upgrades.
function M.parse(command)
  local out = {}
  for i = 2, #command do
    local n, v = command[i]:match("^%-%-([^=]+)=(.*)$")
    if n then out[n] = v end
  end
  return out
end

return M
