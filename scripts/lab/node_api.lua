-- The API half of the lab's kubelet stand-in, doing what a kubelet does (reference/kubelet-standin.md):
-- its client and identity (TLS bootstrap, the embedded client cert of a first control plane,
-- rotation: lab/kubelet_tls.lua, whose functions are this object's methods); Node registration,
-- a Lease and status kept fresh; a mirror pod per static pod (re-created after a delete, replaced
-- when the manifest's hash changes, deleted when the manifest goes) with its status reported.
-- Every call is short (the stand-in's loop is single-threaded): failures are retried next tick.
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local json = require "kube.json"
local kubelet_tls = require "lab.kubelet_tls"
local version = require "framework.version"

local M = {}
M.__index = M

local KUBELET_CONF <const> = kubelet_tls.KUBELET_CONF
local FLAGS_ENV <const> = "/var/lib/kubelet/kubeadm-flags.env"
local STATUS_EVERY <const>, LEASE_EVERY <const>, RESYNC_EVERY <const> = 10, 10, 2

local function log(fmt, ...)
  io.stdout:write(os.date("!%Y-%m-%dT%H:%M:%SZ "), core.redact(fmt:format(...)), "\n")
  io.stdout:flush()
end

local function now_rfc3339() return os.date("!%Y-%m-%dT%H:%M:%SZ") end
local function now_micro()
  local t = core.now()
  return os.date("!%Y-%m-%dT%H:%M:%S", math.floor(t)) .. ("%.6fZ"):format(t % 1):sub(2)
end

M.client_pem_from_kubelet_conf = kubelet_tls.client_pem_from_kubelet_conf
M.connect = kubelet_tls.connect
M.bootstrap = kubelet_tls.bootstrap
M.rotate = kubelet_tls.rotate

function M.new(kubelet)
  return setmetatable({ k = kubelet, node = kubelet.node_name:lower(), mirrors = {}, next = {}, errors = {} }, M)
end

-- Logs an error once until it changes, so a down apiserver does not flood the log.
function M:note(what, err)
  local msg = tostring(err)
  if self.errors[what] ~= msg then log("%s: %s", what, msg) end
  self.errors[what] = msg
end

function M:due(what, every)
  local now = core.monotonic()
  if (self.next[what] or 0) > now then return false end
  self.next[what] = now + every
  return true
end

local function taints_from_flags()
  local env = fs.read(FLAGS_ENV) or ""
  local list = env:match("%-%-register%-with%-taints=([^%s\"]+)")
  local taints = {}
  for t in (list or ""):gmatch("[^,]+") do
    local key, value, effect = t:match("^([^=:]+)=?([^:]*):(%a+)$")
    if key then taints[#taints + 1] = { key = key, value = value ~= "" and value or nil, effect = effect } end
  end
  return taints
end

function M:register()
  local c = self.client
  local node = {
    apiVersion = "v1", kind = "Node",
    metadata = { name = self.node, labels = {
      ["kubernetes.io/hostname"] = self.node, ["kubernetes.io/os"] = "linux", ["kubernetes.io/arch"] = "amd64",
      ["beta.kubernetes.io/os"] = "linux", ["beta.kubernetes.io/arch"] = "amd64" },
      annotations = { ["volumes.kubernetes.io/controller-managed-attach-detach"] = "true" } },
    spec = {},
  }
  local taints = taints_from_flags()
  if #taints > 0 then node.spec.taints = taints end
  local obj, err = c:create(node)
  if not obj and err.code == 409 then obj, err = c:get { apiVersion = "v1", kind = "Node", name = self.node } end
  if not obj then return self:note("register node", err) end
  self.node_uid = obj.metadata.uid
  log("node %s registered (uid %s)", self.node, self.node_uid)
  self.next.status, self.next.lease = 0, 0
end

function M:node_status()
  local ip = self.k.node_ip
  local status = {
    addresses = { { type = "InternalIP", address = ip }, { type = "Hostname", address = self.node } },
    capacity = { cpu = tostring(core.ncpu()), memory = "8Gi", pods = "110", ["ephemeral-storage"] = "50Gi" },
    allocatable = { cpu = tostring(core.ncpu()), memory = "8Gi", pods = "110", ["ephemeral-storage"] = "50Gi" },
    daemonEndpoints = { kubeletEndpoint = { Port = 10250 } },
    nodeInfo = { kubeletVersion = self.k.kubelet_version, kubeProxyVersion = "", operatingSystem = "linux",
      architecture = "amd64", containerRuntimeVersion = "moonadm-lab://" .. version.scripts,
      osImage = "moonadm lab node", kernelVersion = "", machineID = "", systemUUID = "", bootID = "" },
    conditions = {},
  }
  local t = now_rfc3339()
  for _, cond in ipairs {
    { "MemoryPressure", "False", "KubeletHasSufficientMemory" }, { "DiskPressure", "False", "KubeletHasNoDiskPressure" },
    { "PIDPressure", "False", "KubeletHasSufficientPID" },
    -- The lab runs no CNI: Ready without a pod network is the lab's documented difference.
    { "Ready", "True", "KubeletReady" },
  } do
    status.conditions[#status.conditions + 1] = { type = cond[1], status = cond[2], reason = cond[3],
      message = "moonadm lab kubelet stand-in", lastHeartbeatTime = t,
      lastTransitionTime = self.ready_since or t }
  end
  self.ready_since = self.ready_since or t
  local _, err = self.client:patch({ apiVersion = "v1", kind = "Node", name = self.node, subresource = "status" },
    { status = status }, { type = "strategic" })
  if err then return self:note("node status", err) end
  self.errors["node status"] = nil
end

function M:lease()
  local c = self.client
  local ref = { apiVersion = "coordination.k8s.io/v1", kind = "Lease", namespace = "kube-node-lease", name = self.node }
  local spec = { holderIdentity = self.node, leaseDurationSeconds = 40, renewTime = now_micro() }
  local obj, err = c:get(ref)
  if obj then
    obj.spec = spec
    obj, err = c:update(obj)
  elseif err.code == 404 then
    obj, err = c:create { apiVersion = ref.apiVersion, kind = "Lease",
      metadata = { name = self.node, namespace = "kube-node-lease", ownerReferences = { { apiVersion = "v1",
        kind = "Node", name = self.node, uid = self.node_uid } } }, spec = spec }
  end
  if not obj then self:note("lease", err) end
end

-- The mirror pod of a static pod: the manifest's object with the kubelet's annotations, the node's
-- name, a NoExecute toleration and the Node as its controller owner.
function M:mirror_of(pod)
  local m = json.decode(json.encode(pod.manifest))
  m.metadata.name = pod.full_name
  m.metadata.namespace = pod.namespace
  m.metadata.annotations = m.metadata.annotations or {}
  local a = m.metadata.annotations
  a["kubernetes.io/config.hash"] = pod.hash
  a["kubernetes.io/config.mirror"] = pod.hash
  a["kubernetes.io/config.source"] = "file"
  a["kubernetes.io/config.seen"] = pod.seen or now_rfc3339()
  m.metadata.ownerReferences = { { apiVersion = "v1", kind = "Node", name = self.node, uid = self.node_uid,
    controller = true } }
  m.spec.nodeName = self.node
  m.spec.tolerations = m.spec.tolerations or json.array {}
  table.insert(m.spec.tolerations, { operator = "Exists", effect = "NoExecute" })
  m.status = nil
  return m
end

-- live: this pod's mirror as the last list saw it (a node may not GET pods not yet bound to it,
-- so the kubelet learns about mirrors from its list/watch with spec.nodeName=<node>).
function M:ensure_mirror(pod, live)
  local c = self.client
  local ref = { apiVersion = "v1", kind = "Pod", namespace = pod.namespace, name = pod.full_name }
  if live then
    local a = live.metadata.annotations or {}
    if a["kubernetes.io/config.mirror"] == pod.hash and not live.metadata.deletionTimestamp then
      self.mirrors[pod.full_name] = { uid = live.metadata.uid, hash = pod.hash, namespace = pod.namespace }
      return true
    end
    -- stale (old hash) or being deleted: delete with a UID precondition, as the kubelet does
    local _, derr = c:call("DELETE", ref, { body = json.encode { apiVersion = "v1", kind = "DeleteOptions",
      gracePeriodSeconds = 0, preconditions = { uid = live.metadata.uid } }, content_type = "application/json" })
    if derr and derr.code ~= 404 and derr.code ~= 409 then return self:note("mirror " .. pod.full_name, derr) end
    log("mirror pod %s: replaced (hash %s -> %s)", pod.full_name, tostring(a["kubernetes.io/config.mirror"]), pod.hash)
  end
  local obj, cerr = c:create(self:mirror_of(pod))
  if not obj then
    if cerr.code == 409 then self.next.resync = 0 end -- exists already: the next list tells us which
    return self:note("mirror " .. pod.full_name, cerr)
  end
  self.errors["mirror " .. pod.full_name] = nil
  self.mirrors[pod.full_name] = { uid = obj.metadata.uid, hash = pod.hash, namespace = pod.namespace }
  log("mirror pod %s/%s created", pod.namespace, pod.full_name)
  return true
end

function M:report_status(pod)
  local mirror = self.mirrors[pod.full_name]
  if not mirror then return end
  local statuses, all_running, t = {}, true, now_rfc3339()
  for _, c in ipairs(pod.containers) do
    local running = c.pid ~= nil
    all_running = all_running and running
    statuses[#statuses + 1] = {
      name = c.name, image = c.spec.image, imageID = "", containerID = running and ("moonadm-lab://" .. c.pid) or nil,
      ready = running, started = running, restartCount = c.restarts,
      state = running and { running = { startedAt = c.started_at or t } }
        or { waiting = { reason = "CrashLoopBackOff", message = ("exited with %s"):format(tostring(c.last_exit)) } },
    }
  end
  local ip = self.k.node_ip
  local function cond(type_, ok) return { type = type_, status = ok and "True" or "False", lastTransitionTime = t } end
  local status = {
    phase = all_running and "Running" or "Pending", hostIP = ip, hostIPs = { { ip = ip } }, podIP = ip,
    podIPs = { { ip = ip } }, startTime = pod.seen or t, qosClass = "Burstable",
    conditions = { cond("PodReadyToStartContainers", true), cond("Initialized", true), cond("Ready", all_running),
      cond("ContainersReady", all_running), cond("PodScheduled", true) },
    containerStatuses = statuses,
  }
  local _, err = self.client:patch({ apiVersion = "v1", kind = "Pod", namespace = pod.namespace, name = pod.full_name,
    subresource = "status" }, { metadata = { uid = mirror.uid }, status = status }, { type = "strategic" })
  if err and err.code ~= 404 and err.code ~= 409 then self:note("pod status " .. pod.full_name, err) end
end

-- Re-creates deleted mirrors, deletes orphans (mirror pods whose manifest is gone).
function M:resync()
  local c = self.client
  local list, err = c:list({ apiVersion = "v1", kind = "Pod" }, { field_selector = "spec.nodeName=" .. self.node })
  if not list then return self:note("list pods", err) end
  local live = {}
  for _, p in ipairs(list.items or {}) do
    local a = p.metadata.annotations or {}
    if a["kubernetes.io/config.mirror"] then live[p.metadata.name] = p end
  end
  local wanted = {}
  for _, pod in pairs(self.k.pods) do
    wanted[pod.full_name] = true
    local l = live[pod.full_name]
    -- A changed static pod's mirror shows the new hash only once the old pod is gone, as the kubelet
    -- (whose pod worker ends the old static pod before it syncs the new one) does: until then an
    -- upgrade waiting for the hash would take the old process, still serving, for the new one.
    if self.k:still_stopping(pod.predecessors) then goto next_pod end
    local m = self.mirrors[pod.full_name]
    if not l or not m or l.metadata.uid ~= m.uid or l.metadata.deletionTimestamp
      or (l.metadata.annotations or {})["kubernetes.io/config.mirror"] ~= pod.hash then
      if self:ensure_mirror(pod, l) then self:report_status(pod) end
    elseif self.dirty then
      self:report_status(pod)
    end
    ::next_pod::
  end
  for name, p in pairs(live) do
    if not wanted[name] then
      local ok, derr = c:delete({ apiVersion = "v1", kind = "Pod", namespace = p.metadata.namespace, name = name },
        { grace_period = 0, ignore_not_found = true })
      if ok then
        self.mirrors[name] = nil
        log("mirror pod %s deleted: its manifest is gone", name)
      else
        log("deleting mirror pod %s (its manifest is gone): %s; retried next sync", name, tostring(derr))
      end
    end
  end
  self.dirty = false
end

-- Called by the kubelet loop every 200 ms.
-- Every call the API side makes is one attempt (its client's no_retry): each step is a state this
-- tick picks up again, and the pod side, which a reset waits on, runs on the same loop. A client that
-- retried for 3 s held it up to 9 s after a fresh init, deleting three mirror pods (or registering)
-- through the node's own apiserver the reset had just stopped.
function M:tick()
  if not self.client then
    if self:due("connect", 1) then self:connect() end
    return
  end
  -- kubelet.conf rewritten (kubelet-finalize, upgrade): reconnect with the new file
  if self:due("conf", 2) then
    local text = fs.read(KUBELET_CONF)
    if text ~= self.client_conf then
      self.client:close()
      -- a new identity (or none, after a reset): register again, mirrors are found afresh
      self.client, self.client_conf, self.node_uid, self.mirrors = nil, nil, nil, {}
      log(text and "kubelet.conf changed: reconnecting" or "kubelet.conf removed (reset): idle until the node joins again")
      return
    end
  end
  if not self.node_uid then
    if self:due("register", 1) then self:register() end
    return
  end
  if self.rotate_now or self:due("rotate", 60) then
    self:rotate(self.rotate_now)
    if not self.client then return end
  end
  if self:due("status", STATUS_EVERY) then self:node_status() end
  if self:due("lease", LEASE_EVERY) then self:lease() end
  if self:due("resync", RESYNC_EVERY) then self:resync() end
end

function M:pod_changed(pod)
  pod.seen = pod.seen or now_rfc3339()
  self.next.resync = 0
end

function M:pod_removed(pod)
  self.mirrors[pod.full_name] = self.mirrors[pod.full_name]
  self.next.resync = 0
end

function M:pod_status(pod)
  self.dirty = true
  if self.client and self.node_uid then self.next.resync = 0 end
  local _ = pod
end

function M:shutdown()
  if self.client then self.client:close() end
end

return M
