-- The container images of a control plane (kubeadm's images.GetControlPlaneImages), as
-- `config images list|pull` print them: kube-apiserver, kube-controller-manager, kube-scheduler,
-- kube-proxy (unless proxy.disabled), CoreDNS (unless dns.disabled), pause, etcd (local etcd only).
-- This file is the one home of every image name: the manifest and addon builders take theirs from
-- here, so the list and what init deploys never differ; the tags are those of the cluster's minor
-- (config.releases).
local C <const> = require "config.constants"
local releases = require "config.releases"
local yaml = require "moonadm.yaml"

local M = {}

-- A control-plane component's image (kube-apiserver, kube-controller-manager, kube-scheduler,
-- kube-proxy): kubeadm's GetKubernetesImage.
function M.component(cluster, component)
  local repo = cluster.imageRepository or C.image_repository
  local version = (cluster.kubernetesVersion or releases.DEFAULT):gsub("%+", "_")
  return ("%s/%s:%s"):format(repo, component, version)
end

-- The local etcd's image: etcd.local's imageRepository/imageTag win (kubeadm's GetEtcdImage).
function M.etcd(cluster)
  local loc = cluster.etcd and cluster.etcd["local"] or {}
  local repo = loc.imageRepository or cluster.imageRepository or C.image_repository
  return ("%s/etcd:%s"):format(repo, loc.imageTag or releases.etcd_tag(cluster.kubernetesVersion))
end

-- CoreDNS's image: registry.k8s.io keeps it under coredns/ (kubeadm's GetDNSImage).
function M.coredns(cluster)
  local dns = cluster.dns or {}
  local tag = (dns.imageTag and dns.imageTag ~= "") and dns.imageTag or releases.must(cluster.kubernetesVersion).coredns
  local repo = cluster.imageRepository or C.image_repository
  if dns.imageRepository and dns.imageRepository ~= "" then return ("%s/coredns:%s"):format(dns.imageRepository, tag) end
  if repo == "registry.k8s.io" then return "registry.k8s.io/coredns/coredns:" .. tag end
  return ("%s/coredns:%s"):format(repo, tag)
end

-- kubeadm's GetPauseImage: always under the cluster's imageRepository.
function M.pause(cluster)
  return ("%s/pause:%s"):format(cluster.imageRepository or C.image_repository, releases.must(cluster.kubernetesVersion).pause)
end

-- The list of images for a defaulted ClusterConfiguration.
function M.list(cluster)
  local out = {}
  for _, comp in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
    out[#out + 1] = M.component(cluster, comp)
  end
  if not (cluster.proxy and cluster.proxy.disabled) then out[#out + 1] = M.component(cluster, "kube-proxy") end
  if not (cluster.dns and cluster.dns.disabled) then out[#out + 1] = M.coredns(cluster) end
  out[#out + 1] = M.pause(cluster)
  if not (cluster.etcd and cluster.etcd.external) then out[#out + 1] = M.etcd(cluster) end
  return out
end

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local named = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
    return named[c] or ("\\u%04x"):format(c:byte())
  end) .. '"'
end

M.KIND, M.API_VERSION = "Images", "output.kubeadm.k8s.io/v1alpha3"

-- The printers of `config images list -o text|json|yaml` (kubeadm's: one image a line; the
-- output.kubeadm.k8s.io/v1alpha3 Images object as client-go's printers write it).
function M.text(images) return table.concat(images, "\n") .. "\n" end

function M.json(images)
  local items = {}
  for i, s in ipairs(images) do items[i] = "        " .. json_string(s) end
  return ('{\n    "kind": %s,\n    "apiVersion": %s,\n    "images": %s\n}\n'):format(json_string(M.KIND),
    json_string(M.API_VERSION), #items == 0 and "[]" or ("[\n" .. table.concat(items, ",\n") .. "\n    ]"))
end

function M.yaml(images)
  return yaml.encode { apiVersion = M.API_VERSION, kind = M.KIND, images = yaml.array(images) }
end

return M
