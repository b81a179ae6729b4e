-- Site scripts run as root: a scripts dir, phase file or flow file that someone else can change is
-- a way to run their code as root. Each is refused when it (or a directory it sits in, up to but not
-- including a sticky root-owned one such as /tmp) is writable by group or others, or owned by
-- someone other than root or the invoking user. --insecure-scripts turns the refusal into a warning.
local fs = require "moonadm.fs"
local log = require "log"

local M = {}

-- The invoking user: the real uid of this process (/proc/self/status), and under sudo SUDO_UID.
function M.users()
  local ok = { [0] = true }
  local f = io.open("/proc/self/status", "r")
  if f then
    for line in f:lines() do
      local real, eff = line:match("^Uid:%s+(%d+)%s+(%d+)")
      if real then ok[tonumber(real)], ok[tonumber(eff)] = true, true end
    end
    f:close()
  end
  local sudo = tonumber(os.getenv("SUDO_UID") or "")
  if sudo then ok[sudo] = true end
  return ok
end

-- stat of a host path (the fs root is for node paths; scripts live on the host).
local function host_stat(path)
  local saved = fs.root()
  fs.set_root("/")
  local st, err = fs.stat(path)
  fs.set_root(saved)
  return st, err
end

local function problem(path, st, users)
  if st.mode & 0x12 ~= 0 then
    return ("%s is writable by %s (mode %04o)"):format(path,
      st.mode & 0x2 ~= 0 and "others" or "its group", st.mode)
  end
  if not users[st.uid] then return ("%s is owned by uid %d, neither root nor the invoking user"):format(path, st.uid) end
end

local function dirname(p)
  local d = p:match("^(.*)/[^/]*$")
  if d == "" then return "/" end
  return d
end

local function absolute(p)
  if p:sub(1, 1) == "/" then return p end
  return (os.getenv("PWD") or ".") .. "/" .. p
end

-- Returns nil | message for one path: the path itself, then each directory above it until a
-- root-owned sticky directory (/tmp) or /.
local function check_path(path, users)
  local p = absolute(path)
  local st, err = host_stat(p)
  if not st then return nil end -- a missing file fails later with its own message
  local why = problem(p, st, users)
  if why then return why end
  local d = dirname(p)
  while true do
    local ds = host_stat(d)
    if not ds then return nil end
    if ds.uid == 0 and ds.mode & 0x200 ~= 0 then return nil end -- /tmp-like: others cannot replace our entries
    why = problem(d, ds, users)
    if why then return why end
    if d == "/" then return nil end
    d = dirname(d)
  end
end

-- Every file and directory under a scripts dir must be safe too.
local function check_tree(dir, users, depth)
  if depth > 16 then return nil end
  local names = fs.list and (function()
    local saved = fs.root()
    fs.set_root("/")
    local l = fs.list(dir)
    fs.set_root(saved)
    return l
  end)() or {}
  for _, name in ipairs(names) do
    local p = dir .. "/" .. name
    local st = host_stat(p)
    if st and st.type ~= "link" then
      local why = problem(p, st, users)
      if why then return why end
      if st.type == "directory" then
        why = check_tree(p, users, depth + 1)
        if why then return why end
      end
    end
  end
end

-- items: list of {what = "scripts dir"|"phase file"|"flow file", path = ...}. Raises with a clear
-- message, unless insecure (then warns once per item).
function M.check(items, insecure)
  local users = M.users()
  for _, it in ipairs(items) do
    if it.path then
      local why = check_path(it.path, users)
      if not why and it.what == "scripts dir" then why = check_tree(absolute(it.path), users, 0) end
      if why then
        local msg = ("refusing the %s %s: %s. Site scripts run as root: make it owned by root (or you) and "
          .. "writable only by its owner (chmod go-w), or pass --insecure-scripts for development"):format(it.what, it.path, why)
        if not insecure then error(msg, 0) end
        log.warn("--insecure-scripts: running the %s %s anyway: %s", it.what, it.path, why)
      end
    end
  end
end

return M
