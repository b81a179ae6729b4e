-- Waiting for a lab to be up, as `lab up` does before it says so: each node's kubelet (the stand-in's
-- healthz, or a real node's containerd and images), cp1's kube-apiserver (/readyz), then every static
-- Pod's mirror Pod and every Node Ready (and, with the real kubelet, the addons running). Each wait
-- says what it waits for and its timeout, and how long it took, as kubeadm's waits do.
local cjson = require "cjson"
local cni = require "lab.cni"
local core = require "moonadm.core"
local duration = require "config.duration"
local encoding = require "moonadm.encoding"
local fs = require "moonadm.fs"
local kclient = require "kube.client"
local log = require "framework.log"
local net = require "lab.net"
local proc = require "moonadm.proc"
local yaml = require "moonadm.yaml"

local M = {}

-- Polls fn() until it returns true, or fails after timeout seconds naming what is still missing
-- (fn's second value). Says what it waits for and its timeout when it starts, and, as done(), the
-- time it took when it ends, as kubeadm's waits do.
function M.wait_for(what, timeout, fn, done)
  log.info("[lab] Waiting for %s. This can take up to %s", what, duration.format_seconds(timeout))
  local t0 = core.monotonic()
  local deadline = t0 + timeout
  local missing
  while true do
    local ok, v, why = pcall(fn)
    if not ok then error(v, 0) end
    if v then
      log.info("[lab] %s after %s", done or (what .. ": done"), duration.format_seconds(core.monotonic() - t0))
      return v
    end
    missing = why or missing
    if core.monotonic() >= deadline then break end
    core.sleep(0.25)
  end
  error(("timed out after %s waiting for %s%s"):format(duration.format_seconds(timeout), what,
    missing and (": " .. missing) or ""), 0)
end

-- The API client of the lab in dir, with its admin.conf → client | nil, err.
function M.admin_client(dir)
  return kclient.from_kubeconfig(dir .. "/admin.conf", { timeout = 5, request_timeout = 5, connect_timeout = 2 })
end

-- Each Node's readiness by name: true, or what its Ready condition says.
local function node_readiness(nodes)
  local ready = {}
  for _, n in ipairs(nodes.items or {}) do
    local r = "no Ready condition"
    for _, cond in ipairs((n.status or {}).conditions or {}) do
      if cond.type == "Ready" then r = cond.status == "True" or ("Ready=" .. tostring(cond.status)) end
    end
    ready[n.metadata.name] = r
  end
  return ready
end

-- Adds to no_mirror every static Pod manifest of node n whose mirror Pod live (the Pods by
-- namespace/name) lacks: none, not Running (the real kubelet's hash is its own), or of an older
-- manifest (the stand-in's hash, as it computes it).
local function missing_mirrors(st, n, live, no_mirror)
  local mdir = n.root .. "/etc/kubernetes/manifests"
  local files = fs.list(mdir) or {}
  table.sort(files)
  for _, f in ipairs(files) do
    if not f:match("^%.") and (f:match("%.ya?ml$") or f:match("%.json$")) then
      local fh = io.open(mdir .. "/" .. f, "r")
      local text = fh and fh:read("a")
      if fh then fh:close() end
      local docs = text and yaml.decode(text, f)
      local md = docs and type(docs[1]) == "table" and docs[1].metadata
      if md and md.name then
        local key = (md.namespace or "default") .. "/" .. md.name .. "-" .. n.name:lower()
        local p = live[key]
        local hash = ((p and p.metadata.annotations) or {})["kubernetes.io/config.mirror"]
        if not p then
          no_mirror[#no_mirror + 1] = key
        elseif st.kubelet == "real" then
          -- the real kubelet's hash is its own: the mirror Pod must run, as the kubelet reports it
          local phase = (p.status or {}).phase
          if phase ~= "Running" then no_mirror[#no_mirror + 1] = ("%s (%s)"):format(key, tostring(phase)) end
        elseif hash ~= encoding.sha256_hex(text):sub(1, 32) then
          no_mirror[#no_mirror + 1] = key .. " (of an older manifest)"
        end
      end
    end
  end
end

-- With the real kubelet the addons run too: every Deployment of kube-system available and every
-- DaemonSet ready on every node it wants → what is not yet | nil, err.
local function addons_not_running(c)
  local not_running = {}
  for _, kind in ipairs { "Deployment", "DaemonSet" } do
    local list, lerr = c:list({ apiVersion = "apps/v1", kind = kind, namespace = "kube-system" }, { timeout = 5 })
    if not list then return nil, ("listing the %ss: %s"):format(kind, tostring(lerr)) end
    for _, o in ipairs(list.items or {}) do
      local want, have
      if kind == "Deployment" then
        want, have = (o.spec or {}).replicas or 1, (o.status or {}).availableReplicas or 0
      else
        want, have = (o.status or {}).desiredNumberScheduled or 0, (o.status or {}).numberReady or 0
        if want == 0 then want = 1 end -- not scheduled yet
      end
      if have < want then
        not_running[#not_running + 1] = ("%s %s (%d/%d ready)"):format(kind, o.metadata.name, math.tointeger(have) or 0,
          math.tointeger(want) or 0)
      end
    end
  end
  return not_running
end

-- What still keeps the lab from being up, or nil when it is: for every joined node, every static
-- Pod manifest in its etc/kubernetes/manifests must have its mirror Pod (<pod>-<node>, showing
-- the manifest's current hash as the stand-in computes it) in the API, and every Node must be Ready.
function M.not_up(c, st)
  local pods, perr = c:list({ apiVersion = "v1", kind = "Pod" }, { timeout = 5 })
  if not pods then return "listing the Pods: " .. tostring(perr) end
  local nodes, nerr = c:list({ apiVersion = "v1", kind = "Node" }, { timeout = 5 })
  if not nodes then return "listing the Nodes: " .. tostring(nerr) end
  local live = {}
  for _, p in ipairs(pods.items or {}) do live[(p.metadata.namespace or "") .. "/" .. p.metadata.name] = p end
  local ready = node_readiness(nodes)
  local no_mirror, not_ready = {}, {}
  for _, n in ipairs(st.nodes) do
    if n.role ~= "spare" then
      missing_mirrors(st, n, live, no_mirror)
      local r = ready[n.name:lower()]
      if r ~= true then
        -- a real kubelet's own words are in its log
        local where = st.kubelet == "real" and ("; kubelet log " .. n.root .. "/var/log/kubelet.log") or ""
        not_ready[#not_ready + 1] = ("%s (%s%s)"):format(n.name, r or "not registered", where)
      end
    end
  end
  local not_running = {}
  if st.kubelet == "real" then
    local aerr
    not_running, aerr = addons_not_running(c)
    if not not_running then return aerr end
  end
  local parts = {}
  if #no_mirror > 0 then parts[#parts + 1] = "no mirror Pod for " .. table.concat(no_mirror, ", ") end
  if #not_running > 0 then parts[#parts + 1] = "addons not ready: " .. table.concat(not_running, ", ") end
  if #not_ready > 0 then parts[#parts + 1] = "Nodes not Ready: " .. table.concat(not_ready, ", ") end
  if #parts > 0 then return table.concat(parts, "; ") end
end

-- Every stand-in answering on 127.0.0.1:10248 in its node's namespace (a stand-in that exited fails
-- the wait at once).
local function wait_standins(st)
  local all = {}
  for _, n in ipairs(st.nodes) do all[#all + 1] = n.name end
  M.wait_for(("the kubelet stand-ins of %s at http://127.0.0.1:10248/healthz of each node"):format(table.concat(all, " ")),
    30, function()
      local missing = {}
      for _, n in ipairs(st.nodes) do
        if not n.healthy then
          if not proc.alive(n.kubelet_pid) then
            error("kubelet stand-in of " .. n.name .. " exited: see " .. n.root .. "/var/log/moonadm-kubelet.log", 0)
          end
          n.healthy = proc.run { argv = { "ip", "netns", "exec", net.netns_name(n.name, st.name), "bash", "-c",
            "exec 3<>/dev/tcp/127.0.0.1/10248" } } == 0
          if not n.healthy then missing[#missing + 1] = n.name end
        end
      end
      if #missing == 0 then return true end
      return false, "not answering yet: " .. table.concat(missing, " ")
    end, "The kubelet stand-ins are healthy")
  for _, n in ipairs(st.nodes) do n.healthy = nil end
end

-- Every real node's init reporting containerd up and the images imported.
local function wait_real_nodes(st)
  M.wait_for("containerd and the lab's images on every node", 180, function()
    local missing = {}
    for _, n in ipairs(st.nodes) do
      local f = io.open(n.root .. "/lab-node.json", "r")
      local r = f and cjson.decode(f:read("a"))
      if f then f:close() end
      if r and r.ready == false then error(("node %s: %s (log: %s/var/log/moonadm-node.log)"):format(n.name, r.error, n.root), 0) end
      if not (r and r.ready) then
        if not proc.alive(n.init_pid) then
          error(("node %s: its init exited: see %s/var/log/moonadm-node.log"):format(n.name, n.root), 0)
        end
        missing[#missing + 1] = n.name
      end
    end
    if #missing == 0 then return true end
    return false, "not ready yet: " .. table.concat(missing, " ")
  end, "containerd runs and the images are imported on every node")
end

-- Every node's kubelet side ready for init and join: the stand-ins, or the real nodes' containerd.
function M.wait_kubelets(st)
  if st.kubelet == "real" then wait_real_nodes(st) else wait_standins(st) end
end

-- The kube-apiserver of node (cp1) answering /readyz through kubeconfig conf (the lab's kubectl).
function M.wait_apiserver(st, node, conf)
  M.wait_for(("the kube-apiserver of %s to be ready (/readyz)"):format(node.name), 240, function()
    local code, out = proc.run { argv = { st.bin_dir .. "/kubectl", "--kubeconfig", conf, "get", "--raw", "/readyz" } }
    if code == 0 and out:match("^ok") then return true end
    return false, (out or ""):gsub("%s+$", ""):sub(-300)
  end, ("The kube-apiserver of %s is ready"):format(node.name))
end

-- "up" only when it is: every static Pod of every joined node has its mirror Pod in the API and
-- every Node is Ready (M.not_up), read with moonadm's own client and the lab's admin kubeconfig;
-- a real-kubelet lab's pod network wired meanwhile (lab/cni.lua). timeout: seconds.
function M.wait_up(st, timeout)
  local names = {}
  for _, n in ipairs(st.nodes) do if n.role ~= "spare" then names[#names + 1] = n.name end end
  local c, cerr = M.admin_client(st.dir)
  if not c then error(("an API client from %s/admin.conf: %s"):format(st.dir, tostring(cerr)), 0) end
  local okw, werr = pcall(M.wait_for, ("every static Pod's mirror Pod and every Node Ready (%s)"):format(
    table.concat(names, " ")), timeout, function()
      if st.kubelet == "real" then
        local wired, werr2 = cni.wire(c, st)
        if not wired then return false, werr2 end
      end
      local why = M.not_up(c, st)
      return why == nil, why
    end, "Every static Pod has its mirror Pod and every Node is Ready")
  c:close()
  if not okw then error(werr, 0) end
end

return M
