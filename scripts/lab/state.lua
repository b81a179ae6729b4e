-- The lab's record of what it started: DIR/lab.json (nodes, addresses, PIDs), so that `lab down`
-- stops exactly what `lab up` started and a stale lab from a killed run can be cleaned.
-- lab.json holds the lab's bootstrap token and certificate key (with them anyone could fetch and
-- decrypt the kubeadm-certs Secret, the cluster's CA keys): it and every other file of the lab that
-- holds a secret are 0600, in a lab dir that is 0700, each written atomically at its final mode.
local cjson = require "cjson"
local fs = require "moonadm.fs"

local M = {}

function M.path(dir) return dir .. "/lab.json" end

-- Host paths (the lab works on host paths; the fs root is for node paths).
local function on_host(f, ...)
  local saved = fs.root()
  fs.set_root("/")
  local r = table.pack(pcall(f, ...))
  fs.set_root(saved)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- Writes a host file atomically, created with its final mode (an octal string); parent dirs it has to
-- create get dir_mode (default "0700"). Raises with the path on failure.
function M.write(path, text, mode, dir_mode)
  on_host(function()
    local parent = path:match("^(.*)/[^/]*$")
    if parent and parent ~= "" then
      local ok, err = fs.mkdir(parent, dir_mode or "0700")
      if not ok then error(("lab: creating the dir of %s: %s"):format(path, err), 0) end
    end
    local ok, err = fs.write(path, text, mode)
    if not ok then error(("lab: writing %s: %s"):format(path, err), 0) end
  end)
end

-- mkdir -p on the host; the dirs it creates get mode, an existing one is left as it is.
function M.ensure_dir(path, mode)
  on_host(function()
    local ok, err = fs.mkdir(path, mode)
    if not ok then error(("lab: creating %s (mode %s): %s"):format(path, mode, tostring(err)), 0) end
  end)
end

-- mkdir -p on the host; the dirs it creates get mode, and the last one is set to mode even if it
-- existed (only for the lab's own dirs: never a shared one such as /tmp).
function M.mkdir(path, mode)
  on_host(function()
    local ok, err = fs.mkdir(path, mode)
    if ok then ok, err = os.execute(("chmod %s '%s'"):format(mode, path)) end
    if not ok then error(("lab: creating %s (mode %s): %s"):format(path, mode, tostring(err)), 0) end
  end)
end

-- Copies a host file atomically at the given mode.
function M.copy(from, to, mode)
  local f, err = io.open(from, "rb")
  if not f then error(("lab: reading %s: %s"):format(from, err), 0) end
  local text = f:read("a")
  f:close()
  M.write(to, text, mode)
end

function M.load(dir)
  local f = io.open(M.path(dir), "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local ok, st = pcall(cjson.decode, text)
  if not ok then return nil, ("%s is not valid JSON: %s"):format(M.path(dir), st) end
  return st
end

function M.save(dir, st)
  M.write(M.path(dir), cjson.encode(st), "0600")
end

function M.remove(dir) os.remove(M.path(dir)) end

return M
