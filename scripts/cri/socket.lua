-- The CRI socket of a node: nodeRegistration.criSocket, else detected among the known sockets
-- under the root (kubeadm's DetectCRISocket): one found is used; several is an error asking the
-- user to choose; none gives kubeadm's default (containerd) with a warning.
local fs = require "moonadm.fs"
local config = require "config"
local log = require "framework.log"

local M = {}

M.DEFAULT = "unix:///var/run/containerd/containerd.sock"
M.KNOWN = {
  "unix:///var/run/containerd/containerd.sock",
  "unix:///var/run/crio/crio.sock",
  "unix:///var/run/cri-dockerd.sock",
}

local function socket_path(endpoint)
  return endpoint:match("^unix://(/.*)$") or (endpoint:sub(1, 1) == "/" and endpoint) or nil
end

local function is_socket(path)
  local st = fs.stat(path)
  return st and st.type ~= "directory" and st.type ~= "file" or false
end

-- Returns the endpoint | raises when several runtimes are found.
function M.detect()
  local found = {}
  for _, ep in ipairs(M.KNOWN) do
    if is_socket(socket_path(ep)) then found[#found + 1] = ep end
  end
  if #found > 1 then
    error(("found multiple CRI endpoints on the host. Please define which one do you wish to use by setting " ..
      "the 'criSocket' field in the kubeadm configuration file: %s"):format(table.concat(found, ", ")), 0)
  end
  if #found == 1 then return found[1] end
  log.warn("no known CRI socket found under %s (%s); using the default %s", fs.root(),
    table.concat(M.KNOWN, ", "), M.DEFAULT)
  return M.DEFAULT
end

-- The node's endpoint (configured or detected), memoised on ctx.data.
function M.socket(ctx)
  if ctx.data.cri_socket then return ctx.data.cri_socket end
  local doc = config.node_document(ctx.cfg)
  local s = doc.nodeRegistration and doc.nodeRegistration.criSocket
  if not s or s == "" then s = M.detect() end
  ctx.data.cri_socket = s
  return s
end

return M
