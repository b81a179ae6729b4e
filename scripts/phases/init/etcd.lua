-- init phase "etcd": Generate static Pod manifest file for local etcd.
-- Its body lands with the node files issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "etcd",
  desc = "Generate static Pod manifest file for local etcd",
  requires = { "pki" },
  provides = { "local-etcd" },
  children = {
    { name = "local", desc = "Generate the static Pod manifest file for a local, single-node local etcd instance", run = phase.todo("etcd/local") },
  },
}
