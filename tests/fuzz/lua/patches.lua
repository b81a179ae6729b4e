-- patch files: a patch (strategic merge, merge or JSON) from the input applied to a stock
-- kube-apiserver static pod.
local yaml = require "moonadm.yaml"
local patches = require "manifests.patches"
local target = [[
apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    command: [kube-apiserver, --secure-port=6443]
    volumeMounts:
    - name: k8s-certs
      mountPath: /etc/kubernetes/pki
  volumes:
  - name: k8s-certs
    hostPath: {path: /etc/kubernetes/pki}
]]
local kinds = { "strategic", "merge", "json" }
return function(text)
  local docs = yaml.decode(text, "fuzz-patch.yaml")
  if not docs or docs[1] == nil then return end
  local obj = yaml.decode(target)[1]
  local kind = kinds[(#text % 3) + 1]
  if kind == "merge" then patches.merge(obj, docs[1])
  elseif kind == "strategic" then patches.strategic(obj, docs[1])
  else patches.json(obj, docs[1]) end
end
