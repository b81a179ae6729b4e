-- join phase "etcd-join": Join etcd for control plane nodes.
return {
  name = "etcd-join",
  desc = "Join etcd for control plane nodes",
  requires = { "pki", "kubelet-started" },
  provides = { "local-etcd" },
  run = function(ctx) require("join.etcd").join(ctx) end,
}
