-- join phase "kubelet-wait-bootstrap": Wait for the kubelet to bootstrap itself.
-- For a control plane whose kubelet talks to its local kube-apiserver, that apiserver can only
-- serve once the local etcd member exists: this phase requires it (KEP-4471), so a flow that
-- waits first is refused before anything runs.
local lazy = require "framework.lazy"
local jk = lazy.require "cluster.kubelet_bootstrap"

return {
  name = "kubelet-wait-bootstrap",
  flags = { "config", "cri-socket", "dry-run" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Wait for the kubelet to bootstrap itself",
  requires = function(ctx)
    if jk.local_server(ctx) and jk.local_etcd(ctx) then
      return { "kubelet-started", "local-etcd" }
    end
    return { "kubelet-started" }
  end,
  requires_why = {
    ["local-etcd"] = "This control plane's kubelet bootstraps against its own kube-apiserver, which cannot " ..
      "serve before its local etcd member has joined: waiting for the TLS bootstrap first would never end " ..
      "(KEP-4471). Run etcd-join before kubelet-wait-bootstrap (the stock order), or in the old order " ..
      "(ControlPlaneKubeletLocalMode=false) let the kubelet use the control-plane endpoint (--kubelet-server endpoint).",
  },
  provides = { "kubelet-bootstrapped" },
  run = function(ctx) jk.wait_bootstrap(ctx) end,
}
