-- Where a lab and what it runs live on the host: .lab/ next to the binary's checkout (bin/moonadm ->
-- ..), else in the working directory; each lab's directory, the lab's binaries and its image archive.
local core = require "moonadm.core"
local net = require "lab.net"

local M = {}

-- p made absolute against the working directory (the lab's processes run elsewhere).
function M.abs(p)
  if p:sub(1, 1) == "/" then return p end
  return (os.getenv("PWD") or ".") .. "/" .. p
end

function M.top_dir()
  local exe = core.exe()
  local checkout = exe:match("^(.*)/bin/moonadm$")
  return checkout or (os.getenv("PWD") or ".")
end

function M.default_dir(name)
  return M.top_dir() .. "/.lab/" .. ((name == nil or name == net.NAME) and "cluster" or name)
end
function M.default_bin() return os.getenv("MOONADM_LAB_BIN") or (M.top_dir() .. "/.lab/bin") end
function M.default_images() return os.getenv("MOONADM_LAB_IMAGES") or (M.top_dir() .. "/.lab/images.tar") end

return M
