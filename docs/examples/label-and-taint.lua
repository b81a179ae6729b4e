-- Site phase "label-and-taint": labels (and, with a credential that may, taints) this node from
-- facts about it, right after its kubelet starts — so nothing is scheduled on it before it carries
-- the site's labels. Insert it after kubelet-start on any join (or init):
--
--   moonadm join --config join.yaml --phase-file label-and-taint.lua \
--     --phase-add label-and-taint:after=kubelet-start
--
-- Facts: the CPU count and memory of the machine, the node's name, and what provisioning wrote in
-- /etc/kubernetes/site/node-facts.yaml (a flat YAML map, e.g. `zone: edge`, `dedicated: gpu`).
-- Credential: /etc/kubernetes/site/labeler.conf when provisioning put one there (a kubeconfig that
-- may patch Nodes: labels and taints), else the node's own kubelet.conf (labels only: the
-- NodeRestriction admission plugin forbids a kubelet to change its own taints).
local yaml = require "moonadm.yaml"

local M = {
  name = "label-and-taint",
  desc = "Label and taint this node from facts about it",
  requires = { "kubelet-started" },
  provides = { "node-labels" },
}

M.FACTS = "/etc/kubernetes/site/node-facts.yaml"
M.LABELER = "/etc/kubernetes/site/labeler.conf"
M.PREFIX = "site.example.com/"

-- What we know about this node. read(path) -> text | nil (under the run's root).
function M.facts(ctx, read)
  local f = { name = ctx.cfg.join and ctx.cfg.join.nodeRegistration and ctx.cfg.join.nodeRegistration.name
    or ctx.cfg.init and ctx.cfg.init.nodeRegistration and ctx.cfg.init.nodeRegistration.name }
  local cpu = io.open("/proc/cpuinfo", "r")
  if cpu then
    local n = 0
    for line in cpu:lines() do if line:match("^processor%s*:") then n = n + 1 end end
    cpu:close()
    f.cpus = n
  end
  local mem = io.open("/proc/meminfo", "r")
  if mem then
    for line in mem:lines() do
      local kb = line:match("^MemTotal:%s+(%d+)")
      if kb then f.memory_gib = math.floor(tonumber(kb) / 1048576 + 0.5) end
    end
    mem:close()
  end
  local text = read(M.FACTS)
  if text then
    local docs = assert(yaml.decode(text, M.FACTS))
    for k, v in pairs(docs[1] or {}) do f[k] = tostring(v) end
  end
  return f
end

-- The site's policy: facts -> labels (name -> value) and taints (list of {key, value, effect}).
function M.policy(f)
  local labels, taints = {}, {}
  if f.cpus then labels[M.PREFIX .. "cpus"] = tostring(f.cpus) end
  if f.memory_gib then labels[M.PREFIX .. "memory-class"] = f.memory_gib >= 64 and "large" or f.memory_gib >= 8 and "medium" or "small" end
  if f.zone then labels["topology.kubernetes.io/zone"] = f.zone end
  if f.dedicated then
    labels[M.PREFIX .. "dedicated"] = f.dedicated
    taints[#taints + 1] = { key = M.PREFIX .. "dedicated", value = f.dedicated, effect = "NoSchedule" }
  end
  labels[M.PREFIX .. "labelled-by"] = "moonadm-site-phase"
  return labels, taints
end

-- Merges our taints into the node's (ours replace ones with the same key and effect).
function M.merge_taints(live, ours)
  local out = {}
  for _, t in ipairs(live or {}) do
    local mine = false
    for _, o in ipairs(ours) do if o.key == t.key and o.effect == t.effect then mine = true end end
    if not mine then out[#out + 1] = t end
  end
  for _, o in ipairs(ours) do out[#out + 1] = o end
  return out
end

function M.run(ctx)
  local f = M.facts(ctx, function(p) return ctx:read(p) end)
  local labels, taints = M.policy(f)
  if not f.name then error("label-and-taint: no node name in the configuration (nodeRegistration.name)", 0) end
  if ctx.dry_run then
    ctx.log.info("[dryrun] Would label node %s: %s", f.name, yaml.encode(labels))
    return
  end
  local labeler = ctx:exists(M.LABELER)
  -- kubelet-start has started the kubelet; in the KEP-4471 order its TLS bootstrap finishes later,
  -- so wait for its credentials and its Node object here.
  local c = ctx:client(labeler and M.LABELER or "kubelet", { wait = 120 })
  local capi = require "cluster.api"
  local node = capi.poll("Node " .. f.name, 120, 0.5, function()
    return c:get { apiVersion = "v1", kind = "Node", name = f.name }
  end)
  -- What ran before this phase, from the journal: the e2e checks that this phase ran right after kubelet-start.
  local before = {}
  for path in pairs(ctx.journal and ctx.journal.data.phases or {}) do before[#before + 1] = path end
  table.sort(before)
  local patch = { metadata = { labels = labels, annotations = {
    [M.PREFIX .. "phases-done-before"] = table.concat(before, ","),
  } } }
  if #taints > 0 then
    if labeler then
      patch.spec = { taints = M.merge_taints(node.spec and node.spec.taints, taints) }
    else
      ctx.log.warn("label-and-taint: no %s: the kubelet's credentials cannot taint its own Node; taints %s skipped",
        M.LABELER, taints[1].key)
    end
  end
  local ok, err = c:patch({ apiVersion = "v1", kind = "Node", name = f.name }, patch, { type = "merge" })
  if not ok then error(("patching Node %s: %s"):format(f.name, tostring(err)), 0) end
  ctx.log.info("[label-and-taint] Labelled node %s (%d labels, %d taints)", f.name,
    (function() local n = 0 for _ in pairs(labels) do n = n + 1 end return n end)(), patch.spec and #taints or 0)
end

return M
