-- join phase "check-etcd": Check that the local etcd is healthy.
return {
  name = "check-etcd",
  desc = "Check that the local etcd is healthy",
  hidden = true,
  requires = { "pki" },
  run = function(ctx) require("etcd.join").check(ctx) end,
}
