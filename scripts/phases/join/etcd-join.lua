-- join phase "etcd-join": Join etcd for control plane nodes.
local lazy = require "framework.lazy"
local etcd_join = lazy.require "etcd.join"
return {
  name = "etcd-join",
  flags = { "apiserver-advertise-address", "config", "control-plane", "dry-run", "node-name", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Join etcd for control plane nodes",
  requires = { "pki", "kubelet-started" },
  provides = { "local-etcd" },
  run = function(ctx) etcd_join.join(ctx) end,
}
