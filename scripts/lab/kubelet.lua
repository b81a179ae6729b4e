-- The lab's kubelet stand-in: `moonadm lab kubelet --root DIR --node-ip IP --bin-dir DIR`.
-- It does a kubelet's part for a lab node: runs each static pod under DIR/etc/kubernetes/manifests
-- as host processes (restarted with back-off on a crash, restarted when the manifest changes,
-- stopped when it goes), serves healthz on 127.0.0.1:10248 of its node, and — once the node has
-- credentials — talks to the API as a kubelet does (lab/node_api.lua). libuv (lua-luv) is the
-- event loop: timers, signals and the healthz listener.
local uv = require "luv"
local cjson = require "cjson"
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local proc = require "moonadm.proc"
local yaml = require "moonadm.yaml"
local pods_mod = require "lab.pods"
local releases = require "config.releases"
local encoding = require "moonadm.encoding"

local M = {}

local MANIFESTS <const> = "/etc/kubernetes/manifests"
local STATUS <const> = "/var/lib/moonadm-lab/kubelet-status.json"
local BACKOFF_START <const>, BACKOFF_MAX <const> = 1, 30 -- seconds; a real kubelet: 10 s .. 5 min
local STOP_GRACE <const> = 10

local function log(fmt, ...)
  io.stdout:write(os.date("!%Y-%m-%dT%H:%M:%SZ "), core.redact(fmt:format(...)), "\n")
  io.stdout:flush()
end

local Kubelet = {}
Kubelet.__index = Kubelet

function M.new(opts)
  local self = setmetatable({
    root = opts.root, node_ip = opts.node_ip, bin_dir = opts.bin_dir,
    node_name = opts.node_name, pods = {}, stopping = {}, api = nil,
    kubelet_version = opts.kubelet_version or releases.DEFAULT,
  }, Kubelet)
  fs.set_root(self.root)
  return self
end

-- Starts (or restarts) one container of a pod.
function Kubelet:start_container(pod, c)
  local argv, err = pods_mod.argv(c.spec, self.bin_dir)
  if not argv then
    log("pod %s: %s", pod.name, err)
    c.backoff_until = core.monotonic() + BACKOFF_MAX
    return
  end
  local mounts, notes = pods_mod.mounts(pod.manifest, c.spec, self.root)
  for _, n in ipairs(notes) do log("pod %s: %s", pod.name, n) end
  local logdir = ("/var/log/pods/%s_%s"):format(pod.namespace, pod.full_name)
  fs.mkdir(logdir, "0755")
  local pid, serr = proc.spawn { argv = argv, env = pods_mod.env(c.spec), mounts = mounts,
    log = fs.path(logdir .. "/" .. c.name .. ".log"), die_with_parent = true }
  if not pid then
    log("pod %s: container %s: %s", pod.name, c.name, serr)
    c.backoff_until = core.monotonic() + BACKOFF_MAX
    return
  end
  c.pid, c.started = pid, core.monotonic()
  c.started_at = os.date("!%Y-%m-%dT%H:%M:%SZ")
  log("pod %s: started container %s (pid %d): %s", pod.name, c.name, pid, table.concat(argv, " "):sub(1, 200))
end

-- Returns the PIDs being stopped, so a successor can wait for them (ports, data dirs).
function Kubelet:stop_pod(pod, why)
  local pids = {}
  for _, c in ipairs(pod.containers) do
    if c.pid then
      proc.signal(c.pid, "TERM")
      self.stopping[#self.stopping + 1] = { pid = c.pid, pod = pod.full_name, deadline = core.monotonic() + STOP_GRACE }
      log("pod %s: stopping container %s (pid %d): %s", pod.name, c.name, c.pid, why)
      pids[#pids + 1] = c.pid
      c.pid = nil
    end
  end
  return pids
end

function Kubelet:still_stopping(pids)
  for _, s in ipairs(self.stopping) do
    for _, p in ipairs(pids or {}) do if s.pid == p then return true end end
  end
  return false
end

local function decode_manifest(text, file)
  local docs, err = yaml.decode(text, file)
  if not docs then return nil, err end
  local m = docs[1]
  if type(m) ~= "table" or m.kind ~= "Pod" or type(m.metadata) ~= "table" or not m.metadata.name then
    return nil, file .. ": not a Pod manifest with a metadata.name"
  end
  return m
end

-- Reconciles running pods with the manifest directory.
function Kubelet:sync_manifests()
  local seen = {}
  for _, f in ipairs(fs.list(MANIFESTS) or {}) do
    if not f:match("^%.") and (f:match("%.yaml$") or f:match("%.yml$") or f:match("%.json$")) then
      local path = MANIFESTS .. "/" .. f
      local text = fs.read(path)
      if text then
        seen[path] = true
        local hash = encoding.sha256_hex(text):sub(1, 32)
        local pod = self.pods[path]
        if not pod or pod.hash ~= hash then
          local m, err = decode_manifest(text, path)
          if not m then
            if not pod or pod.bad ~= hash then log("manifest %s", err) end
            if pod then pod.bad = hash end
          else
            local predecessors = pod and self:stop_pod(pod, "manifest changed") or {}
            local name = m.metadata.name
            pod = { file = path, hash = hash, manifest = m, name = name, namespace = m.metadata.namespace or "default",
              full_name = name .. "-" .. self.node_name:lower(), containers = {}, predecessors = predecessors }
            for _, cs in ipairs((m.spec or {}).containers or {}) do
              pod.containers[#pod.containers + 1] = { name = cs.name, spec = cs, restarts = 0, backoff = BACKOFF_START,
                backoff_until = 0 }
            end
            self.pods[path] = pod
            log("pod %s: manifest %s (hash %s)", pod.name, path, hash)
            if self.api then self.api:pod_changed(pod) end
          end
        end
      end
    end
  end
  for path, pod in pairs(self.pods) do
    if not seen[path] then
      self:stop_pod(pod, "manifest removed")
      self.pods[path] = nil
      if self.api then self.api:pod_removed(pod) end
    end
  end
end

-- Reaps exited processes, restarts crashed containers after their back-off, enforces stop deadlines.
function Kubelet:reap()
  local now = core.monotonic()
  for _, pod in pairs(self.pods) do
    for _, c in ipairs(pod.containers) do
      if c.pid then
        local ended, code = proc.wait(c.pid, true)
        if ended then
          c.last_exit, c.pid = code, nil
          c.restarts = c.restarts + 1
          if now - (c.started or now) > 60 then c.backoff = BACKOFF_START end
          c.backoff_until = now + c.backoff
          log("pod %s: container %s exited with %d; restart in %ds", pod.name, c.name, code, c.backoff)
          c.backoff = math.min(c.backoff * 2, BACKOFF_MAX)
          if self.api then self.api:pod_status(pod) end
        end
      elseif now >= (c.backoff_until or 0) and not self:still_stopping(pod.predecessors) then
        -- (the old version of a changed pod must be gone first: it holds the ports and the data)
        self:start_container(pod, c)
        if self.api and c.pid then self.api:pod_status(pod) end
      end
    end
  end
  local still = {}
  for _, s in ipairs(self.stopping) do
    local ended = proc.wait(s.pid, true)
    if not ended then
      if now > s.deadline then proc.signal(s.pid, "KILL") end
      still[#still + 1] = s
    end
  end
  self.stopping = still
end

function Kubelet:write_status()
  local list = {}
  for _, pod in pairs(self.pods) do
    for _, c in ipairs(pod.containers) do
      list[#list + 1] = { pod = pod.full_name, container = c.name, pid = c.pid or cjson.null, restarts = c.restarts,
        hash = pod.hash }
    end
  end
  table.sort(list, function(a, b) return a.pod < b.pod end)
  -- containers of removed pods still in their grace period: what a reset removes by force
  local stopping = {}
  for _, s in ipairs(self.stopping) do stopping[#stopping + 1] = { pod = s.pod, pid = s.pid } end
  local text = cjson.encode { node = self.node_name, pid = core.getpid(), pods = list,
    stopping = #stopping > 0 and stopping or nil }
  if text ~= self.last_status then
    fs.mkdir("/var/lib/moonadm-lab", "0755")
    fs.write(STATUS, text, "0644")
    self.last_status = text
  end
end

-- Stops every pod and waits for each process (TERM, then KILL after the grace period).
function Kubelet:shutdown()
  log("shutting down: stopping every pod")
  for _, pod in pairs(self.pods) do self:stop_pod(pod, "kubelet stopping") end
  local deadline = core.monotonic() + STOP_GRACE
  while #self.stopping > 0 do
    local still = {}
    for _, s in ipairs(self.stopping) do
      if not proc.wait(s.pid, true) then
        if core.monotonic() > deadline then proc.signal(s.pid, "KILL") end
        still[#still + 1] = s
      end
    end
    self.stopping = still
    if #still > 0 then core.sleep(0.05) end
  end
  fs.remove(STATUS)
end

-- healthz on 127.0.0.1:10248 of this node's network namespace, as a kubelet serves it.
function Kubelet:serve_healthz(port)
  local server = uv.new_tcp()
  local ok, err = server:bind("127.0.0.1", port)
  if not ok then error(("healthz: cannot listen on 127.0.0.1:%d: %s"):format(port, err), 0) end
  server:listen(64, function()
    local client = uv.new_tcp()
    server:accept(client)
    client:read_start(function(rerr, chunk)
      if rerr or not chunk then client:close() return end
      local path = chunk:match("^GET ([^ ]+)") or ""
      local body, status = "ok", "200 OK"
      if not (path == "/healthz" or path:match("^/healthz%?")) then body, status = "404 page not found\n", "404 Not Found" end
      client:write(("HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s")
        :format(status, #body, body), function() client:close() end)
    end)
  end)
  return server
end

function Kubelet:run(opts)
  log("kubelet stand-in for node %s (%s), root %s, binaries from %s", self.node_name, self.node_ip, self.root, self.bin_dir)
  self:serve_healthz(opts.healthz_port or 10248)
  if opts.api then self.api = opts.api(self) end
  local tick = uv.new_timer()
  tick:start(0, 200, function()
    local ok, err = pcall(function()
      -- Pods first, every tick: the API side's calls can block for seconds while the local
      -- apiserver starts, and a new manifest must not wait for them.
      self:sync_manifests()
      self:reap()
      self:write_status() -- before the API side, which can block: a reset waits on this file
      if self.api then self.api:tick() end
      self:sync_manifests()
      self:reap()
      self:write_status() -- every tick (written only when it changed): a reset waits on it
    end)
    if not ok then log("sync error: %s", tostring(err)) end
  end)
  local function stop()
    tick:stop()
    self:shutdown()
    if self.api then pcall(self.api.shutdown, self.api) end
    uv.stop()
  end
  -- SIGUSR1: rotate the client certificate now (as if it were near its end of life)
  uv.new_signal():start("sigusr1", function()
    if self.api then self.api.rotate_now = true; self.api.next.rotate = 0 end
  end)
  for _, sig in ipairs { "sigterm", "sigint" } do
    local h = uv.new_signal()
    h:start(sig, stop)
  end
  uv.run()
  log("stopped")
end

return M
