-- The kubelet's command line as systemd builds it from a unit's [Service] section (kubeadm's drop-in
-- packaging/10-kubeadm.conf): Environment= assignments, EnvironmentFile= files (a leading "-": may
-- be missing), the last non-empty ExecStart=, with $VAR split on whitespace and ${VAR} kept as one
-- word, as systemd.service(5) says. The real-kubelet lab has no systemd: its node init starts the
-- kubelet from this, so the lab runs exactly the command a systemd node runs.
local M = {}

-- "K=V" or "K=\"V with spaces\"" words of an Environment= line.
local function assignments(value, env)
  for word in value:gmatch('"[^"]*"') do
    local k, v = word:sub(2, -2):match("^([%w_]+)=(.*)$")
    if k then env[k] = v end
  end
  for word in (value:gsub('"[^"]*"', "")):gmatch("%S+") do
    local k, v = word:match("^([%w_]+)=(.*)$")
    if k then env[k] = v end
  end
end

-- An EnvironmentFile: KEY=VALUE lines, # comments, values optionally quoted.
function M.env_file(text, env)
  env = env or {}
  for line in (text or ""):gmatch("[^\n]+") do
    line = line:match("^%s*(.-)%s*$")
    if line ~= "" and not line:match("^[#;]") then
      local k, v = line:match("^([%w_]+)%s*=%s*(.*)$")
      if k then
        local q = v:match('^"(.*)"$') or v:match("^'(.*)'$")
        env[k] = q or v
      end
    end
  end
  return env
end

-- Parses the unit text → {env = {...}, env_files = {{path=, optional=}}, exec = "the ExecStart line"}.
function M.parse(text)
  local u = { env = {}, env_files = {}, exec = nil }
  local section
  for line in (text or ""):gmatch("[^\n]+") do
    line = line:match("^%s*(.-)%s*$")
    if line:match("^%[.*%]$") then
      section = line
    elseif section == "[Service]" and line ~= "" and not line:match("^[#;]") then
      local k, v = line:match("^([%w]+)%s*=%s*(.*)$")
      if k == "Environment" then assignments(v, u.env)
      elseif k == "EnvironmentFile" then
        local optional = v:sub(1, 1) == "-"
        u.env_files[#u.env_files + 1] = { path = optional and v:sub(2) or v, optional = optional }
      elseif k == "ExecStart" then u.exec = v ~= "" and v or nil end
    end
  end
  return u
end

-- The argv of the unit's ExecStart with env (the unit's and its files', read by read(path) → text|nil).
-- Returns argv | nil, err (a required EnvironmentFile missing, no ExecStart).
function M.argv(u, read)
  local env = {}
  for k, v in pairs(u.env) do env[k] = v end
  for _, f in ipairs(u.env_files) do
    local text = read(f.path)
    if text then M.env_file(text, env)
    elseif not f.optional then return nil, ("EnvironmentFile %s is missing"):format(f.path) end
  end
  if not u.exec then return nil, "the unit has no ExecStart" end
  local argv = {}
  for word in u.exec:gmatch("%S+") do
    local whole = word:match("^%${([%w_]+)}$")
    local split = word:match("^%$([%w_]+)$")
    if whole then
      argv[#argv + 1] = env[whole] or ""
    elseif split then
      for w in (env[split] or ""):gmatch("%S+") do argv[#argv + 1] = w end
    else
      argv[#argv + 1] = word
    end
  end
  return argv
end

return M
