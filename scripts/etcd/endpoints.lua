-- KEP-2506: the etcd client endpoints come from the etcd static pods' annotation
-- kubeadm.kubernetes.io/etcd.advertise-client-urls, never from a stored list.
--   urls, err = endpoints.endpoints_from_pods(client, {timeout=60, interval=0.5})
-- `client` is a kube.client. Lists the pods component=etcd,tier=control-plane in kube-system and
-- retries until the list is non-empty and every etcd pod has the annotation (pods that are not
-- Ready are still used). URLs are returned in pod order, without duplicates.
local core = require "moonadm.core"
local log = require "framework.log"
local shape = require "kube.shape"

local M = {
  ANNOTATION = "kubeadm.kubernetes.io/etcd.advertise-client-urls",
  SELECTOR = "component=etcd,tier=control-plane",
  NAMESPACE = "kube-system",
  INTERVAL = 0.5,
  TIMEOUT = 60,
}

local function once(client)
  local list, err = client:list({ apiVersion = "v1", kind = "Pod", namespace = M.NAMESPACE },
    { label_selector = M.SELECTOR })
  if not list then return nil, "listing the etcd pods: " .. tostring(err) end
  local items = list.items
  if #items == 0 then
    return nil, ("no etcd pods (%s) in %s"):format(M.SELECTOR, M.NAMESPACE)
  end
  local urls, seen, missing = {}, {}, {}
  for i, pod in ipairs(items) do
    local name, why = shape.name(pod)
    local anns, awhy = shape.strings(pod, "metadata.annotations")
    local conds, cwhy = shape.get(pod, "status.conditions", "array")
    why = why or awhy or cwhy
    if why then return nil, ("listing the etcd pods: Pod %d of the list: %s"):format(i, why) end
    local ann = anns[M.ANNOTATION]
    if not ann or ann == "" then
      missing[#missing + 1] = name
    else
      for u in ann:gmatch("[^,%s]+") do
        if not seen[u] then seen[u] = true; urls[#urls + 1] = u end
      end
      local ready = false
      for _, c in ipairs(conds or {}) do
        if shape.get(c, "type") == "Ready" and shape.get(c, "status") == "True" then ready = true end
      end
      if not ready then log.v(3, "[etcd] the etcd pod %s is not Ready; using its endpoints anyway", name) end
    end
  end
  if #missing > 0 then
    return nil, ("etcd pods without the %s annotation: %s"):format(M.ANNOTATION, table.concat(missing, ", "))
  end
  return urls
end

function M.endpoints_from_pods(client, opts)
  opts = opts or {}
  local timeout, interval = opts.timeout or M.TIMEOUT, opts.interval or M.INTERVAL
  local sleep, clock = opts.sleep or core.sleep, opts.clock or core.monotonic
  local t0, n = clock(), 0
  local last
  while true do
    n = n + 1
    local urls, err = once(client)
    if urls then return urls end
    last = err
    if clock() - t0 + interval > timeout then break end
    sleep(interval)
  end
  return nil, ("etcd endpoints: gave up after %d attempts in %.1fs: %s"):format(n, clock() - t0, last)
end

return M
