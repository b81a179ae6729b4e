-- Deleting what reset deletes, under the root, through moonadm.fs: the contents of a directory
-- (the directory itself stays, as kubeadm's CleanDir), a file, a whole tree. Each call says
-- whether something was there, so a second reset can show it changed nothing; under --dry-run
-- nothing is touched and the callers print what they would do.
local fs = require "moonadm.fs"
local log = require "framework.log"

local M = {}

-- Is the directory missing or empty?
function M.is_empty(dir)
  local list = fs.list(dir)
  return list == nil or #list == 0
end

-- Deletes the contents of dir (kept). Returns the number of entries deleted | nil, err.
function M.clean_dir(dir)
  local st = fs.stat(dir)
  if not st then return 0 end
  if st.type ~= "directory" then return nil, dir .. " is not a directory" end
  local n = #(fs.list(dir) or {})
  if n == 0 then return 0 end
  local ok, err = fs.remove_tree(dir, true)
  if not ok then return nil, err end
  return n
end

-- Removes a file (or a tree). Returns true when something was there | nil, err.
function M.remove(path)
  if not fs.stat(path) then return false end
  local ok, err = fs.remove_tree(path)
  if not ok then return nil, err end
  return true
end

-- kubeadm's list printing: [a b c]
function M.list_text(list) return "[" .. table.concat(list, " ") .. "]" end

-- Deletes the contents of each dir in order, warning for each failure (best effort, as kubeadm).
-- Returns the total number of entries deleted.
function M.clean_dirs(dirs)
  local total = 0
  for _, d in ipairs(dirs) do
    local n, err = M.clean_dir(d)
    if not n then log.warn("[reset] Failed to delete contents of %q directory: %s", d, tostring(err))
    else total = total + n end
  end
  return total
end

-- Mount points strictly below a host directory (from /proc/self/mountinfo), deepest first.
function M.mounts_under(host_dir, mountinfo)
  local text = mountinfo
  if not text then
    local f = io.open("/proc/self/mountinfo", "r")
    if not f then return {} end
    text = f:read("a")
    f:close()
  end
  local out, prefix = {}, host_dir:gsub("/+$", "") .. "/"
  for line in text:gmatch("[^\n]+") do
    local mp = line:match("^%S+ %S+ %S+ %S+ (%S+)")
    if mp then
      mp = mp:gsub("\\(%d%d%d)", function(o) return string.char(tonumber(o, 8)) end)
      if mp:sub(1, #prefix) == prefix then out[#out + 1] = mp end
    end
  end
  table.sort(out, function(a, b) return #a > #b end)
  return out
end

-- Is the host path a mount point of its own?
function M.is_mount_point(host_path, mountinfo)
  local parent = host_path:match("^(.*)/[^/]+$") or "/"
  for _, mp in ipairs(M.mounts_under(parent == "" and "/" or parent, mountinfo)) do
    if mp == host_path then return true end
  end
  return false
end

return M
