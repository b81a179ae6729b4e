-- What `command -v NAME` finds on this host, without a shell per question: the first PATH entry
-- holding an executable file NAME (a NAME with a slash: that path, if executable). Host paths, not
-- under --root, as the shell's answer was. Preflight asks this a dozen times per run.
local uv = require "luv"

local M = {}

local function executable(path)
  local st = uv.fs_stat(path)
  return st ~= nil and st.type ~= "directory" and uv.fs_access(path, "X") == true
end

-- path (default: $PATH) → the full path, or nil
function M.find(name, path)
  if name == "" then return nil end
  if name:find("/", 1, true) then return executable(name) and name or nil end
  for dir in ((path or os.getenv("PATH") or "") .. ":"):gmatch("([^:]*):") do
    local full = (dir == "" and "." or dir) .. "/" .. name
    if executable(full) then return full end
  end
  return nil
end

return M
