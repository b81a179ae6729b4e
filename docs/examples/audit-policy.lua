-- Site phase "audit-policy": writes an audit policy and turns on kube-apiserver's audit log.
-- It runs before init's control-plane phase and edits the run's ClusterConfiguration, so the
-- stock control-plane phase renders the flags and the hostPath volumes into the manifest:
--
--   moonadm init --phase-file audit-policy.lua --phase-add audit-policy:before=control-plane
--
-- (or copy it to <scripts dir>/phases/site/audit-policy.lua and name it in a flow file).
local yaml = require "moonadm.yaml"

local POLICY_DIR = "/etc/kubernetes/audit"
local POLICY = POLICY_DIR .. "/policy.yaml"
local LOG_DIR = "/var/log/kubernetes/audit"

-- The site's policy: metadata for everything, no bodies of Secrets or tokens, nothing for the
-- noisy read-only health checks.
local policy = {
  apiVersion = "audit.k8s.io/v1", kind = "Policy",
  omitStages = { "RequestReceived" },
  rules = {
    { level = "None", nonResourceURLs = { "/healthz*", "/readyz*", "/livez*", "/version" } },
    { level = "Metadata", resources = { { group = "", resources = { "secrets", "configmaps" } },
      { group = "authentication.k8s.io", resources = { "tokenreviews" } } } },
    { level = "RequestResponse", verbs = { "create", "update", "patch", "delete" },
      resources = { { group = "rbac.authorization.k8s.io" } } },
    { level = "Metadata" },
  },
}

-- Adds name=value to a v1beta4 extraArgs list unless the user's config already sets the name.
local function arg(list, name, value)
  for _, a in ipairs(list) do if a.name == name then return end end
  list[#list + 1] = { name = name, value = value }
end

local function volume(list, v)
  for _, x in ipairs(list) do if x.name == v.name then return end end
  list[#list + 1] = v
end

return {
  name = "audit-policy",
  desc = "Write the site's audit policy and enable kube-apiserver's audit log",
  provides = { "audit-policy" },
  run = function(ctx)
    ctx:mkdir(POLICY_DIR, "0755")
    ctx:mkdir(LOG_DIR, "0700")
    ctx:write(POLICY, yaml.encode(policy), "0600")
    ctx.log.info("[audit-policy] Wrote %s; kube-apiserver logs to %s", POLICY, LOG_DIR)
    local cl = ctx.cfg.cluster
    cl.apiServer = cl.apiServer or {}
    local api = cl.apiServer
    api.extraArgs = api.extraArgs or setmetatable({}, yaml.array_mt)
    arg(api.extraArgs, "audit-policy-file", POLICY)
    arg(api.extraArgs, "audit-log-path", LOG_DIR .. "/audit.log")
    arg(api.extraArgs, "audit-log-maxage", "30")
    arg(api.extraArgs, "audit-log-maxbackup", "10")
    api.extraVolumes = api.extraVolumes or setmetatable({}, yaml.array_mt)
    volume(api.extraVolumes, { name = "audit-policy", hostPath = POLICY_DIR, mountPath = POLICY_DIR,
      readOnly = true, pathType = "DirectoryOrCreate" })
    volume(api.extraVolumes, { name = "audit-log", hostPath = LOG_DIR, mountPath = LOG_DIR,
      readOnly = false, pathType = "DirectoryOrCreate" })
  end,
}
