-- A tool of the etcd image (etcdutl) run once on this node, as a static Pod the kubelet runs: a node that
-- runs etcd has its image, so nothing needs installing. A static Pod and not a sandbox of our own
-- (`crictl run`): the kubelet kills, within seconds, every running pod sandbox it does not know
-- (HandlePodCleanups' orphaned runtime pods), so only a pod of its own is safe on a kubelet's node.
-- The Pod (restartPolicy Never, the host's network, only the paths given mounted, each at its own
-- path) is written into the manifests dir under a name of its own; its container is found through
-- the CRI by its name, awaited until it exited, its log read; then the manifest goes, and with it the
-- Pod. A manifest a killed run left is removed by the next run.
--   code, output = image_tool.run(ctx, {image=, argv={...}, mounts={{path=, readonly=}}, timeout=})
--   (nil, err when it could not be run)
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local pki = require "moonadm.pki"
local log = require "framework.log"
local manifests = require "manifests"
local cri = require "cri.client"
local crisocket = require "cri.socket"

local M = { TIMEOUT = 300, PREFIX = "moonadm-etcdutl-", START_TIMEOUT = 120 }

local function manifest_dir() return manifests.path("x"):match("^(.*)/") end

-- Manifests of earlier runs (killed before they removed theirs).
function M.remove_stale()
  local dir = manifest_dir()
  for _, f in ipairs(fs.list(dir) or {}) do
    if f:sub(1, #M.PREFIX) == M.PREFIX then
      local ok, err = fs.remove(dir .. "/" .. f)
      if not ok then log.warn("removing the stale one-shot Pod manifest %s/%s: %s", dir, f, err) end
    end
  end
end

local function pod(name, spec)
  local mounts, volumes = {}, {}
  for i, m in ipairs(spec.mounts or {}) do
    local v = "m" .. i
    mounts[i] = { name = v, mountPath = m.path, readOnly = m.readonly == true or nil }
    volumes[i] = { name = v, hostPath = { path = m.path, type = "Directory" } }
  end
  return { apiVersion = "v1", kind = "Pod",
    metadata = { name = name, namespace = "kube-system", labels = { component = "moonadm-etcdutl" } },
    spec = { hostNetwork = true, restartPolicy = "Never",
      containers = { { name = name, image = spec.image, imagePullPolicy = "IfNotPresent", command = spec.argv,
        volumeMounts = mounts } },
      volumes = volumes } }
end

-- The container's ID and exit code once it exited | nil, err.
local function wait_exit(client, name, timeout)
  local deadline = core.monotonic() + timeout
  local last = "the kubelet has not started it"
  while core.monotonic() < deadline do
    local list, err = client:json { "ps", "-a", "--name", "^" .. name .. "$", "-o", "json" }
    local c = list and type(list.containers) == "table" and list.containers[1]
    if c and c.state == "CONTAINER_EXITED" then
      local v, ierr = client:json { "inspect", "-o", "json", c.id }
      if not v then return nil, ierr end
      return c.id, math.tointeger((v.status or {}).exitCode) or -1
    end
    last = c and ("its container is " .. tostring(c.state)) or (err or last)
    core.sleep(0.2)
  end
  return nil, ("the one-shot Pod %s did not finish within %ds: %s"):format(name, timeout, last)
end

function M.run(ctx, spec)
  local client, cerr = cri.new(crisocket.socket(ctx))
  if not client then return nil, cerr end
  M.remove_stale()
  local name = M.PREFIX .. pki.random_hex(4)
  local path = manifest_dir() .. "/" .. name .. ".yaml"
  local ok, err = fs.write(path, manifests.encode(pod(name, spec)), "0600")
  if not ok then return nil, ("writing the one-shot Pod %s: %s"):format(path, err) end
  local id, code = wait_exit(client, name, spec.timeout or M.TIMEOUT)
  local logs = ""
  if id then
    local lerr
    logs, lerr = client:call { "logs", id }
    if not logs then logs = "(its log could not be read: " .. tostring(lerr) .. ")" end
  end
  ok, err = fs.remove(path)
  if not ok then log.warn("removing the one-shot Pod manifest %s: %s", path, err) end
  if not id then return nil, code end
  return code, logs
end

return M
