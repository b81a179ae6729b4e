-- Waiting for the control-plane components to stop once their manifests are gone. In the lab, the
-- kubelet stand-in stops a pod's processes when its manifest goes: the wait is over when its status
-- file (/var/lib/moonadm-lab/kubelet-status.json under the root, when this process sees it) lists
-- no pods, or else when the components' ports stop answering on 127.0.0.1 of this node's network
-- namespace. On a real node, waiting for the containers through the CRI is out of scope.
-- A reset does not sit out the stand-in's grace period (TERM, KILL after 10 s: a kube-apiserver and
-- etcd holding each other's streams take all of it): as kubeadm's reset removes the pods through
-- the CRI, which kills them, it kills the containers the status lists as stopping (opts.force).
local cjson = require "cjson"
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local proc = require "moonadm.proc"
local uv = require "luv"

local M = {
  STATUS = "/var/lib/moonadm-lab/kubelet-status.json",
  TIMEOUT = 40, -- the stand-in: 1 s to notice, TERM, KILL after 10 s
  INTERVAL = 0.2,
  -- manifest name -> the port its component serves on 127.0.0.1
  PORTS = { ["kube-apiserver"] = 6443, etcd = 2379, ["kube-controller-manager"] = 10257, ["kube-scheduler"] = 10259 },
}

-- Does something accept a TCP connection on host:port (within timeout_ms)?
function M.port_answers(host, port, timeout_ms)
  local result, done = false, false
  local tcp, timer = uv.new_tcp(), uv.new_timer()
  local function finish(ok)
    if done then return end
    done, result = true, ok
    timer:stop(); timer:close(); tcp:close()
  end
  -- libuv's clock is cached per loop iteration: stale since the last uv.run (seconds, between
  -- polls), the timer would be due at once and a live port read as closed
  uv.update_time()
  timer:start(timeout_ms or 500, 0, function() finish(false) end)
  local ok = pcall(tcp.connect, tcp, host, port, function(err) finish(err == nil) end)
  if not ok then finish(false) end
  uv.run()
  return result
end

-- The stand-in's status, when its file is under the root and its process is alive: the list of
-- pods it still runs or still stops (names), and the PIDs of the containers it is stopping. nil
-- when there is no live stand-in status to go by.
function M.status_pods(read)
  local text = (read or fs.read)(M.STATUS)
  if not text then return nil end
  local ok, st = pcall(cjson.decode, text)
  if not ok or type(st) ~= "table" then return nil end
  if type(st.pid) == "number" and not proc.alive(math.tointeger(st.pid)) then return nil end
  local pods, seen, stopping = {}, {}, {}
  local function add(p)
    if type(p) == "table" and type(p.pod) == "string" and not seen[p.pod] then seen[p.pod] = true; pods[#pods + 1] = p.pod end
  end
  for _, p in ipairs(type(st.pods) == "table" and st.pods or {}) do add(p) end
  for _, s in ipairs(type(st.stopping) == "table" and st.stopping or {}) do
    add(s)
    local pid = type(s) == "table" and math.tointeger(s.pid)
    if pid and pid > 1 then stopping[#stopping + 1] = pid end
  end
  return pods, stopping
end

-- Waits until the components stopped. names: manifest names (kube-apiserver, etcd, ...) that were
-- removed; ports: their ports (default M.PORTS). opts: {timeout, interval, probe = fn(port) -> bool,
-- status = fn() -> pods|nil, stopping pids, force = bool, kill = fn(pid), sleep, clock}. Returns true,
-- how ("status" | "ports") | nil, what still runs.
function M.until_stopped(names, opts)
  opts = opts or {}
  local ports = {}
  for _, n in ipairs(names) do
    local p = (opts.ports or M.PORTS)[n]
    if p then ports[#ports + 1] = { name = n, port = p } end
  end
  local probe = opts.probe or function(port) return M.port_answers("127.0.0.1", port, 300) end
  local status = opts.status or M.status_pods
  local sleep, clock = opts.sleep or core.sleep, opts.clock or core.monotonic
  local deadline = clock() + (opts.timeout or M.TIMEOUT)
  local kill = opts.kill or function(pid) proc.signal(pid, "KILL") end
  local killed = {}
  local still
  while true do
    local pods, stopping = status()
    local how
    if pods then
      how, still = "status", pods
      for _, pid in ipairs(opts.force and stopping or {}) do
        if not killed[pid] then killed[pid] = true; kill(pid) end
      end
    else
      how, still = "ports", {}
      for _, p in ipairs(ports) do
        if probe(p.port) then still[#still + 1] = ("%s (port %d)"):format(p.name, p.port) end
      end
    end
    if #still == 0 then return true, how end
    if clock() >= deadline then break end
    sleep(opts.interval or M.INTERVAL)
  end
  return nil, still
end

return M
