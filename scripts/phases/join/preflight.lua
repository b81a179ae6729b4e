-- join phase "preflight": Run join pre-flight checks.
-- kubeadm's join checks: IsPrivilegedUser, DirAvailable--etc-kubernetes-manifests,
-- FileAvailable--etc-kubernetes-kubelet.conf, FileAvailable--etc-kubernetes-bootstrap-kubelet.conf,
-- FileAvailable--etc-kubernetes-pki-ca.crt, the node checks (binaries, Hostname, KubeletVersion,
-- Port-10250, Swap); a control-plane join adds the control-plane checks of init.
local lazy = require "framework.lazy"
local preflight = lazy.require "preflight.checks"
local log = require "framework.log"
local C = lazy.require "config.constants"
local releases = lazy.require "config.releases"
local nodeview = lazy.require "node.view"
local vip = lazy.require "endpoint.vip"

return {
  name = "preflight",
  flags = { "apiserver-advertise-address", "apiserver-bind-port", "certificate-key", "config", "control-plane", "cri-socket", "discovery-file", "discovery-token", "discovery-token-ca-cert-hash", "discovery-token-unsafe-skip-ca-verification", "dry-run", "ignore-preflight-errors", "node-name", "tls-bootstrap-token", "token" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run join pre-flight checks",
  always_run = true,
  provides = { "preflight" },
  run = function(ctx)
    log.info("[preflight] Running pre-flight checks")
    preflight.run(ctx, { preflight.is_privileged_user })
    local join = ctx.cfg.join or {}
    local checks = {
      preflight.dir_available("/etc/kubernetes/manifests"),
      -- kubelet.conf is the kubelet's, written after the TLS bootstrap our bootstrap-kubelet.conf started
      preflight.file_available("/etc/kubernetes/kubelet.conf", "/etc/kubernetes/bootstrap-kubelet.conf"),
      preflight.file_available("/etc/kubernetes/bootstrap-kubelet.conf"),
      preflight.file_available(join.caCertPath or C.ca_cert_path),
    }
    -- The cluster's version is only known after discovery: the kubelet skew is checked against this
    -- engine's newest release here, as kubeadm checks against its own version before discovery.
    local cp_version = ctx.cfg.cluster and ctx.cfg.cluster.kubernetesVersion or releases.newest()
    for _, c in ipairs(preflight.node_checks(ctx, nodeview.name(ctx), cp_version)) do checks[#checks + 1] = c end
    if join.controlPlane then
      vip.given_interface(ctx) -- a bad --control-plane-endpoint-vip-interface stops the join before anything is written
      local ok, ip = pcall(nodeview.advertise_address, ctx)
      if not ok then log.warn("%s", ip); ip = nil end
      for _, c in ipairs(preflight.control_plane_checks(ctx, ip, nodeview.bind_port(ctx))) do
        checks[#checks + 1] = c
      end
    end
    preflight.run(ctx, checks)
  end,
}
