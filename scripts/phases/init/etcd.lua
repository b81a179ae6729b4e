-- init phase "etcd": Generate static Pod manifest file for local etcd.
-- Creates the data dir (0700) and writes /etc/kubernetes/manifests/etcd.yaml; with external etcd
-- it only says so, as kubeadm does.
local lazy = require "framework.lazy"
local log = require "framework.log"
local manifests = lazy.require "manifests"
local manifests_etcd = lazy.require "manifests.etcd"

local function run_local(ctx)
  local etcd = ctx.cfg.cluster.etcd or {}
  if etcd.external then
    log.info("[etcd] External etcd mode: Skipping the creation of a manifest for local etcd")
    return
  end
  ctx:mkdir(manifests_etcd.data_dir(ctx.cfg.cluster), "0700")
  log.info("[etcd] Creating static Pod manifest for local etcd in %q", manifests.DIR)
  manifests.create(ctx, "etcd")
end

return {
  name = "etcd",
  flags = { "cert-dir", "config", "dry-run", "image-repository", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Generate static Pod manifest file for local etcd",
  requires = { "pki" },
  provides = { "local-etcd" },
  children = {
    { name = "local", desc = "Generate the static Pod manifest file for a local, single-node local etcd instance", run = run_local },
  },
}
