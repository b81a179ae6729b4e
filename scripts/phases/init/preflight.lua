-- init phase "preflight": Run pre-flight checks.
-- kubeadm's init checks with its names: IsPrivilegedUser, NumCPU, Mem, Port-<bindPort>, Port-10259,
-- Port-10257, FileAvailable--etc-kubernetes-manifests-*.yaml, the binaries of the node runtime
-- (FileExisting-*), Hostname, KubeletVersion, Port-10250, Swap, and for local etcd Port-2379,
-- Port-2380, DirAvailable--var-lib-etcd; on a node with a runtime CRI, ContainerRuntimeVersion,
-- SystemVerification, Service-kubelet, then ImagePull. See scripts/preflight/checks.lua and docs/manifests.md.
local lazy = require "framework.lazy"
local preflight = lazy.require "preflight.checks"
local log = require "framework.log"
local nodeview = lazy.require "node.view"
local vip = lazy.require "endpoint.vip"

return {
  name = "preflight",
  flags = { "config", "cri-socket", "dry-run", "ignore-preflight-errors", "image-repository" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run pre-flight checks",
  always_run = true,
  provides = { "preflight" },
  run = function(ctx)
    log.info("[preflight] Running pre-flight checks")
    preflight.run(ctx, { preflight.is_privileged_user })
    vip.preflight(ctx) -- a bad --control-plane-endpoint-vip setting stops the init before anything is written
    local ok, ip = pcall(nodeview.advertise_address, ctx)
    if not ok then log.warn("%s", ip); ip = nil end
    local checks = preflight.control_plane_checks(ctx, ip, nodeview.bind_port(ctx))
    for _, c in ipairs(preflight.node_checks(ctx, nodeview.name(ctx), ctx.cfg.cluster.kubernetesVersion)) do
      checks[#checks + 1] = c
    end
    preflight.run(ctx, checks)
    preflight.pull_images(ctx, ctx.cfg.cluster)
  end,
}
