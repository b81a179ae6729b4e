-- Command-line flags with pflag's semantics, which kubeadm users' scripts rely on:
-- `--name=value` and `--name value`, booleans as `--name` or `--name=false`, string lists
-- comma-separated and repeatable, `-v N`. Unknown flags are errors, as in kubeadm.
local M = {}

-- spec: list of {name=, short=, type="string"|"bool"|"int"|"list", default=, help=, hidden=}
-- Returns flags (name -> value, defaults applied), positional args, set (name -> true when given
-- on the command line) | nil, err.
function M.parse(spec, argv)
  local by_name, by_short = {}, {}
  for _, f in ipairs(spec) do
    by_name[f.name] = f
    if f.short then by_short[f.short] = f end
  end
  local values, set, args = {}, {}, {}
  local function assign(f, raw, shown)
    local v
    if f.type == "bool" then
      if raw == nil or raw == "true" then v = true
      elseif raw == "false" then v = false
      else return nil, ("invalid argument %q for %q flag: must be true or false"):format(raw, shown) end
    elseif f.type == "int" then
      v = math.tointeger(tonumber(raw))
      if not v then return nil, ("invalid argument %q for %q flag: not an integer"):format(raw, shown) end
    elseif f.type == "list" then
      v = set[f.name] and values[f.name] or {}
      for item in raw:gmatch("[^,]+") do v[#v + 1] = item end
    else
      v = raw
    end
    values[f.name], set[f.name] = v, true
    return true
  end
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      table.move(argv, i + 1, #argv, #args + 1, args)
      break
    end
    local long, eq = a:match("^%-%-([^=]+)=?(.*)$")
    local short = not long and a:match("^%-(%a)$")
    if long or short then
      local f = long and by_name[long] or by_short[short]
      local shown = long and ("--" .. long) or ("-" .. short)
      if not f then return nil, ("unknown flag: %s"):format(shown) end
      local raw
      if long and a:find("=", 1, true) then
        raw = eq
      elseif f.type ~= "bool" then
        i = i + 1
        raw = argv[i]
        if raw == nil then return nil, ("flag needs an argument: %s"):format(shown) end
      end
      local ok, err = assign(f, raw, shown)
      if not ok then return nil, err end
    else
      args[#args + 1] = a
    end
    i = i + 1
  end
  for _, f in ipairs(spec) do
    if values[f.name] == nil and f.default ~= nil then
      local d = f.default
      if type(d) == "table" then d = table.move(d, 1, #d, 1, {}) end
      values[f.name] = d
    end
  end
  return values, args, set
end

-- Help text for a flag list, aligned like cobra's.
function M.usage(spec)
  local rows, width = {}, 0
  for _, f in ipairs(spec) do
    if not f.hidden then
      local left = (f.short and ("-" .. f.short .. ", ") or "    ") .. "--" .. f.name ..
        (f.type == "bool" and "" or (" " .. (f.type == "list" and "strings" or f.type)))
      rows[#rows + 1] = { left, f.help or "" }
      width = math.max(width, #left)
    end
  end
  local out = {}
  for _, r in ipairs(rows) do out[#out + 1] = ("  %-" .. width .. "s   %s"):format(r[1], r[2]) end
  return table.concat(out, "\n")
end

return M
