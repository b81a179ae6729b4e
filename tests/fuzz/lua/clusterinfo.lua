-- cluster-info handling: the kubeconfig in the ConfigMap (server, CA data) and the CA pin check.
local discovery = require "cluster.discovery"
return function(text)
  local ok, server, ca = pcall(discovery.cluster_of, text, "cluster-info")
  if not ok then
    if type(server) ~= "string" then error(server, 0) end
    if server:match("attempt to") or server:match("bad argument") then error(server, 0) end
    return
  end
  discovery.pinned(ca, { "sha256:" .. ("0"):rep(64) })
end
