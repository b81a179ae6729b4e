-- init phase "kubelet-start": Write kubelet settings and (re)start the kubelet.
-- Stops the kubelet (through the node runtime), writes kubeadm-flags.env, instance-config.yaml
-- (NodeLocalCRISocket) and config.yaml, then starts it again — as kubeadm's runKubeletStart.
local lazy = require "framework.lazy"
local log = require "framework.log"
local kubelet = lazy.require "kubelet"
local runtime = lazy.require "runtime"

return {
  name = "kubelet-start",
  flags = { "config", "cri-socket", "dry-run", "image-repository", "node-name", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Write kubelet settings and (re)start the kubelet",
  requires = { "kubeconfig" },
  provides = { "kubelet-started" },
  run = function(ctx)
    local rt = runtime.for_ctx(ctx)
    if not ctx.dry_run then rt.stop_kubelet(ctx) end
    kubelet.write_files(ctx)
    if not ctx.dry_run then
      log.info("[kubelet-start] Starting the kubelet") -- kubeadm's line; the runtime prints none
      rt.start_kubelet(ctx)
    end
  end,
}
