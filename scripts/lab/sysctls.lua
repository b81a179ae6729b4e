-- The host-wide sysctls a real kubelet sets when protectKernelDefaults is false (kubelet's
-- setupKernelTunables): not per network namespace, so a real-kubelet lab records them before its
-- first kubelet runs and the last lab to go down puts them back.
local cjson = require "cjson"
local state = require "lab.state"

local M = {}

M.KUBELET_SYSCTLS = { "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes" }
M.SYSCTL_RECORD = "/run/moonadm-lab-sysctls.json"

function M.record()
  if io.open(M.SYSCTL_RECORD, "r") then return end -- an earlier lab's record holds the originals
  local rec = {}
  for _, k in ipairs(M.KUBELET_SYSCTLS) do
    local f = io.open("/proc/sys/" .. k, "r")
    if f then rec[k] = f:read("l"); f:close() end
  end
  state.write(M.SYSCTL_RECORD, cjson.encode(rec), "0644", "0755")
end

function M.restore()
  local f = io.open(M.SYSCTL_RECORD, "r")
  if not f then return end
  local ok, rec = pcall(cjson.decode, f:read("a"))
  f:close()
  for k, v in pairs(ok and rec or {}) do
    local w = io.open("/proc/sys/" .. k, "w")
    if w then w:write(v); w:close() end
  end
  os.remove(M.SYSCTL_RECORD)
end

return M
