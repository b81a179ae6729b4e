-- join phase "kubelet-start": Write kubelet settings, certificates and (re)start the kubelet.
-- In the old join order (ControlPlaneKubeletLocalMode=false, moonadm's experiment) it also waits
-- for the TLS bootstrap itself, as kubeadm did before KEP-4471.
local jk = require "join.kubelet"

return {
  name = "kubelet-start",
  flags = { "config", "cri-socket", "discovery-file", "discovery-token", "discovery-token-ca-cert-hash", "discovery-token-unsafe-skip-ca-verification", "dry-run", "node-name", "patches", "tls-bootstrap-token", "token" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Write kubelet settings, certificates and (re)start the kubelet",
  provides = function(ctx)
    if ctx:gate("ControlPlaneKubeletLocalMode") then return { "kubelet-started" } end
    return { "kubelet-started", "kubelet-bootstrapped" }
  end,
  -- Waiting here for a kubelet that talks to its own, not yet running, kube-apiserver would never end:
  -- that apiserver needs the local etcd member first (KEP-4471, seed 000).
  requires = function(ctx)
    if not ctx:gate("ControlPlaneKubeletLocalMode") and jk.local_server(ctx) and jk.local_etcd(ctx) then
      return { "local-etcd" }
    end
    return {}
  end,
  requires_why = {
    ["local-etcd"] = "In the old join order kubelet-start waits for the TLS bootstrap itself, but this " ..
      "control plane's kubelet talks to its own kube-apiserver, which cannot serve before the local etcd " ..
      "member has joined (that happens later, in control-plane-join/etcd): the wait would never end " ..
      "(KEP-4471). Use the stock order (ControlPlaneKubeletLocalMode=true) or --kubelet-server endpoint.",
  },
  run = function(ctx)
    jk.start(ctx)
    if not ctx:gate("ControlPlaneKubeletLocalMode") then jk.wait_bootstrap(ctx) end
  end,
}
