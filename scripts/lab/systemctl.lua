-- The `systemctl` of a real-kubelet lab node (`moonadm lab systemctl ...`, on the node's PATH as
-- systemctl): the verbs moonadm's and kubeadm's systemd node runtime use, for the kubelet service
-- the node's init (lab/node.lua) runs. A request is a line in the node's private /run; the answer
-- waits until the init has applied it, as systemctl waits for its job. Other units are refused.
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local node = require "lab.node"
local util = require "framework.util"

local M = {}

local function state()
  local gen, active, pid = (util.read_host(node.CONTROL .. "/kubelet.state") or ""):match("^(%d+) (%a+) (%d+)")
  return tonumber(gen), active, tonumber(pid)
end

local function request(verb)
  local gen = state()
  if not gen then
    io.stderr:write("System has not been booted with the lab's node init (no " .. node.CONTROL ..
      "/kubelet.state): run this through `moonadm lab exec NODE -- ...` on a `--kubelet real` lab\n")
    return 1
  end
  local want = math.max(gen, tonumber((util.read_host(node.CONTROL .. "/kubelet.want") or ""):match("^(%d+)")) or 0) + 1
  local ok, err = fs.write(node.CONTROL .. "/kubelet.want", ("%d %s\n"):format(want, verb), "0644")
  if not ok then io.stderr:write("systemctl: " .. tostring(err) .. "\n") return 1 end
  local deadline = core.monotonic() + 30
  while core.monotonic() < deadline do
    if (state() or 0) >= want then return 0 end
    core.sleep(0.01)
  end
  io.stderr:write(("Job for kubelet.service timed out (the lab's node init did not answer in 30s)\n"))
  return 1
end

-- argv: systemctl's arguments (options such as --quiet or --now anywhere).
function M.main(argv)
  local quiet, words = false, {}
  for _, a in ipairs(argv) do
    if a == "--quiet" or a == "-q" then quiet = true
    elseif a:sub(1, 1) ~= "-" then words[#words + 1] = a end
  end
  local verb, unit_name = words[1], (words[2] or ""):gsub("%.service$", "")
  if verb == "daemon-reload" then return 0 end
  if unit_name ~= "kubelet" then
    io.stderr:write(("systemctl (the lab's): only the kubelet service is known here, not %q\n"):format(words[2] or ""))
    return 1
  end
  if verb == "start" or verb == "stop" or verb == "restart" then return request(verb) end
  if verb == "enable" or verb == "disable" then return 0 end
  if verb == "is-enabled" then
    if not quiet then print("enabled") end
    return 0
  end
  local _, active, pid = state()
  if verb == "is-active" then
    if not quiet then print(active == "active" and "active" or (active or "inactive")) end
    return active == "active" and 0 or 3
  end
  if verb == "status" then
    print(("● kubelet.service - kubelet (the lab's node init)\n     Active: %s%s"):format(active or "unknown",
      (pid or 0) > 0 and (" (Main PID: " .. pid .. ")") or ""))
    return active == "active" and 0 or 3
  end
  io.stderr:write(("systemctl (the lab's): unknown verb %q\n"):format(verb or ""))
  return 1
end

return M
