-- join phase "check-etcd": Check that the local etcd is healthy.
local lazy = require "framework.lazy"
local join = lazy.require "etcd.join"
return {
  name = "check-etcd",
  desc = "Check that the local etcd is healthy",
  hidden = true,
  requires = { "pki" },
  run = function(ctx) join.check(ctx) end,
}
