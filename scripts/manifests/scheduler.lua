-- The kube-scheduler static Pod (kubeadm getSchedulerCommand).
local images = require "config.images"
local args = require "kube.args"
local pod = require "manifests.pod"
local cm = require "manifests.controller_manager"

local M = {}

M.KUBECONFIG = "/etc/kubernetes/scheduler.conf"

function M.command(ctx)
  local cl = ctx.cfg.cluster
  local d = {
    ["authentication-kubeconfig"] = M.KUBECONFIG,
    ["authorization-kubeconfig"] = M.KUBECONFIG,
    ["bind-address"] = "127.0.0.1",
    ["kubeconfig"] = M.KUBECONFIG,
    ["leader-elect"] = "true",
  }
  local cmd = args.build(d, cl.scheduler and cl.scheduler.extraArgs)
  table.insert(cmd, 1, "kube-scheduler")
  return cmd
end

function M.build(ctx)
  local cl = ctx.cfg.cluster
  local extra = cl.scheduler and cl.scheduler.extraArgs
  local host = cm.probe_host(extra)
  local mounts = { pod.mount("kubeconfig", M.KUBECONFIG, M.KUBECONFIG, true, "FileOrCreate") }
  for _, m in ipairs(pod.extra_mounts(cl.scheduler and cl.scheduler.extraVolumes)) do mounts[#mounts + 1] = m end
  return pod.build {
    name = "kube-scheduler",
    image = images.component(cl, "kube-scheduler"),
    command = M.command(ctx),
    mounts = mounts,
    port = tonumber(args.get(extra, "secure-port")) or 10259,
    cpu = "100m",
    probes = {
      liveness = pod.probe("liveness", host, "/livez", "HTTPS"),
      readiness = pod.probe("readiness", host, "/readyz", "HTTPS"),
      startup = pod.probe("startup", host, "/livez", "HTTPS", pod.health_check_seconds(ctx)),
    },
    env = pod.env(cl.scheduler and cl.scheduler.extraEnvs),
  }
end

return M
