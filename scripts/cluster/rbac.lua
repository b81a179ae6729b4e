-- RBAC object builders with kubeadm's shapes (rbac.authorization.k8s.io/v1).
local M = {}

local G = "rbac.authorization.k8s.io"

function M.group(name) return { apiGroup = G, kind = "Group", name = name } end
function M.user(name) return { apiGroup = G, kind = "User", name = name } end
function M.sa(name, ns) return { kind = "ServiceAccount", name = name, namespace = ns } end

-- A rule: verbs on resources of apiGroups, optionally only resourceNames.
function M.rule(groups, resources, verbs, names)
  return { apiGroups = groups, resources = resources, verbs = verbs, resourceNames = names }
end

function M.role(ns, name, rules)
  return { apiVersion = G .. "/v1", kind = "Role", metadata = { name = name, namespace = ns }, rules = rules }
end

function M.role_binding(ns, name, role, subjects)
  return { apiVersion = G .. "/v1", kind = "RoleBinding", metadata = { name = name, namespace = ns },
    roleRef = { apiGroup = G, kind = "Role", name = role }, subjects = subjects }
end

function M.cluster_role(name, rules)
  return { apiVersion = G .. "/v1", kind = "ClusterRole", metadata = { name = name }, rules = rules }
end

function M.cluster_role_binding(name, role, subjects)
  return { apiVersion = G .. "/v1", kind = "ClusterRoleBinding", metadata = { name = name },
    roleRef = { apiGroup = G, kind = "ClusterRole", name = role }, subjects = subjects }
end

return M
