-- The node's static pod manifests as reset reads them (/etc/kubernetes/manifests under the root).
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local args = require "kube.args"

local M = {}

M.DIR = "/etc/kubernetes/manifests"

-- The decoded Pod of /etc/kubernetes/manifests/NAME.yaml | nil, why.
function M.read(name)
  local path = M.DIR .. "/" .. name .. ".yaml"
  local text = fs.read(path)
  if not text then return nil, "no " .. path end
  local docs, err = yaml.decode(text, path)
  if not docs then return nil, err end
  local pod = docs[1]
  if type(pod) ~= "table" or type(pod.spec) ~= "table" then return nil, path .. ": not a Pod manifest" end
  return pod
end

-- The value of --NAME in the pod's first container's command or args (kube.args reads it).
function M.flag(pod, name)
  return args.of_container(pod.spec.containers and pod.spec.containers[1] or {}, name)
end

-- The hostPath of the pod's volume NAME.
function M.host_path(pod, name)
  for _, v in ipairs(pod.spec.volumes or {}) do
    if v.name == name and type(v.hostPath) == "table" then return v.hostPath.path end
  end
  return nil
end

-- The manifest files in the dir (sorted names, hidden files included: reset removes them all).
function M.files()
  local out = {}
  for _, f in ipairs(fs.list(M.DIR) or {}) do out[#out + 1] = M.DIR .. "/" .. f end
  return out
end

return M
