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

-- A command line's flags as a component's parser reads them ("--name=value", "-name=value" or
-- "--name value"; the last wins): the one reader of a static Pod's or a flags file's flags.
-- Returns {name = value}; words that are no flag's (the binary's name) are passed over.
function M.parse(command)
  local out = {}
  local i = 1
  while i <= #(command or {}) do
    local a = tostring(command[i])
    local n, v = a:match("^%-%-?([^=%-][^=]*)=(.*)$")
    if n then
      out[n] = v
    else
      n = a:match("^%-%-?([^=%-][^=]*)$")
      local nxt = command[i + 1] ~= nil and tostring(command[i + 1]) or nil
      if n and nxt and not nxt:match("^%-") then out[n], i = nxt, i + 1 end
    end
    i = i + 1
  end
  return out
end

-- One flag's value in a command line, or nil.
function M.value(command, name) return M.parse(command)[name] end

-- One flag's value in a container: its command, then its args (the kubelet runs them as one line).
function M.of_container(c, name)
  local line = {}
  for _, a in ipairs(c.command or {}) do line[#line + 1] = a end
  for _, a in ipairs(c.args or {}) do line[#line + 1] = a end
  return M.value(line, name)
end

return M
