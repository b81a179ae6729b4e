-- The host-wide sysctls a real kubelet sets when protectKernelDefaults is false (kubelet's
-- setupKernelTunables), and the inotify instances its nodes need: not per network namespace, so a
-- real-kubelet lab records them before its first kubelet runs and the last lab to go down puts them back.
local cjson = require "cjson"
local log = require "framework.log"
local state = require "lab.state"

local M = {}

M.KUBELET_SYSCTLS = { "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes" }
M.SYSCTL_RECORD = "/run/moonadm-lab-sysctls.json"
M.PROC = "/proc/sys/" -- (a spec points both elsewhere)

-- Each real node's kubelet, containerd and static Pods hold inotify instances (a dozen and more per
-- node); out of them, a kubelet dies with "inotify_init: too many open files" and the lab's wait
-- names the first Pod that never came (etcd), not the cause. Debian's default is 128 per user.
M.INOTIFY = "fs/inotify/max_user_instances"
M.INOTIFY_WANT = 1024

function M.record()
  if io.open(M.SYSCTL_RECORD, "r") then return end -- an earlier lab's record holds the originals
  local rec = {}
  for _, k in ipairs { M.INOTIFY, table.unpack(M.KUBELET_SYSCTLS) } do
    local f = io.open(M.PROC .. k, "r")
    if f then rec[k] = f:read("l"); f:close() end
  end
  state.write(M.SYSCTL_RECORD, cjson.encode(rec), "0644", "0755")
end

-- Raises the inotify instances to INOTIFY_WANT when lower, saying so (record() kept the value to
-- put back); raises when it cannot, naming the sysctl to set.
function M.raise_inotify()
  local path = M.PROC .. M.INOTIFY
  local f = io.open(path, "r")
  local have = f and tonumber(f:read("l"))
  if f then f:close() end
  if not have or have >= M.INOTIFY_WANT then return end
  local w, err = io.open(path, "w")
  local ok = w and w:write(tostring(M.INOTIFY_WANT))
  if w then ok = w:close() and ok end
  if not ok then
    error(("fs.inotify.max_user_instances is %d, too few for a real-kubelet lab (each node's kubelet and containerd " ..
      "hold a dozen and more), and raising it failed: %s; run: sysctl -w fs.inotify.max_user_instances=%d")
      :format(have, tostring(err or "write refused"), M.INOTIFY_WANT), 0)
  end
  log.info("[lab] raised fs.inotify.max_user_instances from %d to %d for the real kubelets (put back by the last lab down)",
    have, M.INOTIFY_WANT)
end

function M.restore()
  local f = io.open(M.SYSCTL_RECORD, "r")
  if not f then return end
  local ok, rec = pcall(cjson.decode, f:read("a"))
  f:close()
  for k, v in pairs(ok and rec or {}) do
    local w = io.open(M.PROC .. k, "w")
    if w then w:write(v); w:close() end
  end
  os.remove(M.SYSCTL_RECORD)
end

return M
