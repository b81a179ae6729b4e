-- init phase "kubeconfig": Generate all kubeconfig files necessary to establish the control plane
-- and the admin kubeconfig file. As in "certs", the parent's run_if checks every file that will be
-- touched and generates the client keys in parallel before any sub-phase writes.
local kubeconfig = require "pki.kubeconfig"
local tree = require "pki.tree"
local log = require "log"

local function prepare(ctx)
  local ok, err = pcall(function()
    local E = tree.env(ctx)
    E.quiet = true -- warnings are the sub-phases' to print
    local kdir = kubeconfig.dir(ctx)
    log.info('[kubeconfig] Using kubeconfig folder "%s"', kdir)
    local skip = {}
    for _, l in ipairs { ctx.flags and ctx.flags["skip-phases"], ctx.cfg.init and ctx.cfg.init.skipPhases } do
      for _, p in ipairs(l or {}) do skip[p] = true end
    end
    if skip.kubeconfig then return end
    local ca = kubeconfig.load_ca(E)
    local actions = {}
    for _, k in ipairs(kubeconfig.list) do
      if not skip["kubeconfig/" .. k.name] then
        actions[#actions + 1] = { entry = k, action = kubeconfig.plan(E, k, kdir, ca) }
      end
    end
    tree.pregenerate(E, actions, "kubeconfig/")
  end)
  if not ok then ctx.data.kubeconfig_plan_error = err end
  return true
end

local function run(name)
  return function(ctx)
    local perr = ctx.data.kubeconfig_plan_error
    if perr then
      ctx.data.kubeconfig_plan_error = nil
      error(perr, 0)
    end
    kubeconfig.apply(tree.env(ctx), kubeconfig.by_name[name], kubeconfig.dir(ctx))
  end
end

return {
  name = "kubeconfig",
  flags = { "apiserver-advertise-address", "apiserver-bind-port", "cert-dir", "config", "control-plane-endpoint", "dry-run", "kubeconfig-dir", "kubernetes-version", "node-name" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file",
  requires = { "pki" },
  provides = { "kubeconfig" },
  run_if = prepare,
  children = {
    { name = "admin", desc = "Generate a kubeconfig file for the admin to use and for kubeadm itself", run = run("admin") },
    { name = "super-admin", desc = "Generate a kubeconfig file for the super-admin", run = run("super-admin") },
    { name = "kubelet", desc = "Generate a kubeconfig file for the kubelet to use *only* for cluster bootstrapping purposes", run = run("kubelet") },
    { name = "controller-manager", desc = "Generate a kubeconfig file for the controller manager to use", run = run("controller-manager") },
    { name = "scheduler", desc = "Generate a kubeconfig file for the scheduler to use", run = run("scheduler") },
  },
}
