-- The node's container runtime through the CRI, spoken by cri-tools' crictl (kubeadm's packages
-- depend on cri-tools; moonadm keeps gRPC and protobuf out of its core and its start-up). What
-- kubeadm asks a runtime: is it running (RuntimeReady), does it implement RuntimeConfig, its sandbox
-- image, whether an image is present, pulling one, and the node's pod sandboxes to stop and remove.
-- Every call has a timeout; every failure returns nil, err naming the endpoint and crictl's words.
local cjson = require "cjson"
local proc = require "moonadm.proc"
local log = require "framework.log"
local which = require "node.which"

local M = {}

M.TIMEOUT = "10s"        -- per call (kubeadm: 10 s for each CRI request, 5 min for a pull)
M.PULL_TIMEOUT = "5m"
M.REMOVE_RETRIES = 5      -- kubeadm's RemoveContainerRetry

local C = {}
C.__index = C

-- endpoint: "unix:///var/run/containerd/containerd.sock" (or a bare path). opts.crictl: the program
-- (default $MOONADM_CRICTL, else crictl on opts.path or $PATH). Returns a client | nil, err (no crictl).
function M.new(endpoint, opts)
  opts = opts or {}
  local crictl = opts.crictl or (not opts.path and os.getenv("MOONADM_CRICTL")) or which.find("crictl", opts.path or os.getenv("PATH") or "/usr/sbin:/usr/bin:/sbin:/bin")
  if not crictl then
    return nil, "crictl not found in system path: moonadm speaks the CRI through cri-tools' crictl " ..
      "(Debian: apt-get install cri-tools, or put crictl on PATH)"
  end
  if endpoint:sub(1, 1) == "/" then endpoint = "unix://" .. endpoint end
  return setmetatable({ endpoint = endpoint, crictl = crictl, run = opts.run or proc.run,
    run_all = opts.run_all or (opts.run and M.one_by_one(opts.run)) or M.side_by_side }, C)
end

-- run_all(specs) → {{code, output}, ...}: every process started, then each waited for.
function M.side_by_side(specs)
  local started = {}
  for i, spec in ipairs(specs) do
    local logf = os.tmpname()
    local pid, err = proc.spawn { argv = spec.argv, log = logf }
    started[i] = { pid = pid, err = err, log = logf }
  end
  local results = {}
  for i, st in ipairs(started) do
    local code, out = nil, st.err
    if st.pid then
      local _, c = proc.wait(st.pid)
      local f = io.open(st.log, "rb")
      code, out = c, f and f:read("a") or ""
      if f then f:close() end
    end
    os.remove(st.log)
    results[i] = { code or -1, out }
  end
  return results
end

-- A run_all over an injected run (specs): the same answers, one after another.
function M.one_by_one(run)
  return function(specs)
    local results = {}
    for i, spec in ipairs(specs) do results[i] = { run(spec) } end
    return results
  end
end

function C:argv(args, timeout)
  -- --config /dev/null: the node's /etc/crictl.yaml must not redirect moonadm to another runtime
  local argv = { self.crictl, "--config", "/dev/null", "--runtime-endpoint", self.endpoint, "--image-endpoint",
    self.endpoint, "--timeout", timeout or M.TIMEOUT }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  return argv
end

function C:result(args, code, out)
  if code ~= 0 then
    out = (out or ""):gsub("%s+$", ""):gsub('^time="[^"]*" level=%a+ msg=', "")
    return nil, ("crictl %s (%s): %s"):format(args[1], self.endpoint, out ~= "" and out or ("exit " .. tostring(code)))
  end
  return out or ""
end

-- Runs crictl with this endpoint → output | nil, err.
function C:call(args, timeout)
  return self:result(args, self.run { argv = self:argv(args, timeout) })
end

-- Runs crictl once per args list, side by side → {{output | nil, err}, ...}.
function C:call_all(list, timeout)
  local specs = {}
  for i, args in ipairs(list) do specs[i] = { argv = self:argv(args, timeout) } end
  local out = {}
  for i, r in ipairs(self.run_all(specs)) do out[i] = { self:result(list[i], r[1], r[2]) } end
  return out
end

function C:json(args, timeout)
  local out, err = self:call(args, timeout)
  if not out then return nil, err end
  local ok, v = pcall(cjson.decode, out)
  if not ok or type(v) ~= "table" then return nil, ("crictl %s (%s): not JSON: %s"):format(args[1], self.endpoint, out:sub(1, 200)) end
  return v
end

-- {version=, runtimeName=, runtimeVersion=, runtimeApiVersion=} | nil, err
function C:version()
  local out, err = self:call { "version" }
  if not out then return nil, err end
  local v = {}
  for k, val in out:gmatch("(%w+):%s*([^\n]*)") do v[k:sub(1, 1):lower() .. k:sub(2)] = val end
  if not v.runtimeName then return nil, ("crictl version (%s): no RuntimeName in %q"):format(self.endpoint, out:sub(1, 200)) end
  return v
end

-- true | nil, err: the runtime answers and its RuntimeReady condition is true (NetworkReady is not
-- looked at, as kubeadm does not: no pod network exists before init).
-- The runtime's `crictl info`, asked once per client (a preflight asks for it twice).
function C:info()
  if not self.info_cache then
    local info, err = self:json { "info", "-o", "json" }
    if not info then return nil, err end
    self.info_cache = info
  end
  return self.info_cache
end

function C:running()
  local info, err = self:info()
  if not info then return nil, "container runtime is not running: " .. err end
  for _, c in ipairs((info.status or {}).conditions or {}) do
    if c.type == "RuntimeReady" and c.status ~= true then
      return nil, ("container runtime condition %q is not true. reason: %s, message: %s"):format(c.type,
        tostring(c.reason or ""), tostring(c.message or ""))
    end
  end
  return true, info
end

-- The runtime's sandbox (pause) image, from its info's config | nil, err.
function C:sandbox_image()
  local info, err = self:info()
  if not info then return nil, err end
  local config = (info.info or info).config
  if type(config) == "string" then
    local ok, v = pcall(cjson.decode, config)
    config = ok and v or nil
  end
  local img = type(config) == "table" and (config.sandboxImage or (config.pinnedImages or {}).sandbox)
  if type(img) ~= "string" or img == "" then return nil, "no 'sandboxImage' field in CRI info config" end
  return img
end

-- true | false (the runtime answers RuntimeConfig as unimplemented) | nil, err
function C:runtime_config_implemented()
  local out, err = self:call { "runtime-config" }
  if out then return true end
  if err:match("Unimplemented") or err:match("unknown method") then return false end
  return nil, "could not check if the runtime config is available: " .. err
end

-- Every tag and digest of the runtime's images, from one `crictl images` (a crictl run costs
-- 30-50 ms; kubeadm's ImageStatus per image is one gRPC call) | nil when it cannot be listed.
function C:image_refs()
  if self.refs_cache == nil then
    local v = self:json { "images", "-o", "json" }
    local refs = false
    if v and type(v.images) == "table" then
      refs = {}
      for _, img in ipairs(v.images) do
        for _, r in ipairs(img.repoTags or {}) do refs[r] = true end
        for _, r in ipairs(img.repoDigests or {}) do refs[r] = true end
      end
    end
    self.refs_cache = refs
  end
  return self.refs_cache or nil
end

-- A reference found as listed is present; any other (a short name the runtime normalizes, an
-- unlisted runtime) is asked of the runtime itself, so nothing is pulled that is already there.
function C:image_exists(ref)
  local refs = self:image_refs()
  if refs and refs[ref] then return true end
  return self:call { "inspecti", "-q", ref } ~= nil
end

function C:pull(ref)
  local out, err = self:call({ "pull", ref }, M.PULL_TIMEOUT)
  if not out then return nil, err end
  self.refs_cache = nil
  return true
end

-- The node's pod sandboxes: {{id=, name=, namespace=, state=}} | nil, err
function C:pods()
  local v, err = self:json { "pods", "-o", "json" }
  if not v then return nil, "failed to list pod sandboxes: " .. err end
  local list = {}
  for _, p in ipairs(v.items or {}) do
    local md = p.metadata or {}
    list[#list + 1] = { id = p.id, name = md.name, namespace = md.namespace, state = p.state }
  end
  return list
end

-- The node's containers (all states): {{id=, name=, pod=, state=}} | nil, err
function C:containers()
  local v, err = self:json { "ps", "-a", "-o", "json" }
  if not v then return nil, "failed to list containers: " .. err end
  local list = {}
  for _, c in ipairs(v.containers or {}) do
    list[#list + 1] = { id = c.id, name = (c.metadata or {}).name, pod = c.podSandboxId, state = c.state }
  end
  return list
end

-- Stops and removes each pod sandbox (and with it its containers), each up to REMOVE_RETRIES times,
-- as kubeadm's reset does → removed count | nil, err (every failure, joined).
function C:remove_pods(ids)
  -- First every pod's stop side by side (containerd takes ~120 ms to stop a pod, one after another
  -- they were most of a reset's time), then one crictl rmp for all. Both CRI calls are idempotent,
  -- so after a failure every pod goes through kubeadm's retry loop one by one.
  if #ids > 0 then
    local list = {}
    for i, id in ipairs(ids) do list[i] = { "stopp", id } end
    local ok, err = true, nil
    for _, r in ipairs(self:call_all(list)) do
      if not r[1] then ok, err = false, r[2] end
    end
    if ok then
      local rm = { "rmp" }
      for _, id in ipairs(ids) do rm[#rm + 1] = id end
      ok, err = self:call(rm)
      if ok then return #ids end
    end
    log.v(1, "[reset] stopping and removing %d pod sandboxes at once failed (%s): one by one", #ids, tostring(err))
  end
  local errs, n = {}, 0
  for _, id in ipairs(ids) do
    local last
    for _ = 1, M.REMOVE_RETRIES do
      local ok, err = self:call { "stopp", id }
      if not ok then last = ("failed to stop running pod %s: %s"):format(id, err)
      else
        ok, err = self:call { "rmp", id }
        if not ok then last = ("failed to remove pod %s: %s"):format(id, err) else last = nil; break end
      end
    end
    if last then errs[#errs + 1] = last else n = n + 1 end
  end
  if #errs > 0 then return nil, table.concat(errs, "; ") end
  return n
end

return M
