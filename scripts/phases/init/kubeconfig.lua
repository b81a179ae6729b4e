-- init phase "kubeconfig": Generate all kubeconfig files necessary to establish the control plane
-- and the admin kubeconfig file. As in "certs", the parent's prepare checks every file the runner
-- selected and generates the client keys in parallel before any sub-phase writes (pki/kubeconfigs.lua).
local lazy = require "framework.lazy"
local kubeconfig = lazy.require "pki.kubeconfigs"

-- The selected sub-phases' files, in the list's order.
local function prepare(ctx, selected)
  local names = {}
  for _, k in ipairs(kubeconfig.list) do
    if selected[k.name] then names[#names + 1] = k.name end
  end
  kubeconfig.prepare(ctx, names)
end

local function run(name) return function(ctx) kubeconfig.write(ctx, name) end end

return {
  name = "kubeconfig",
  flags = { "apiserver-advertise-address", "apiserver-bind-port", "cert-dir", "config", "control-plane-endpoint", "dry-run", "kubeconfig-dir", "kubernetes-version", "node-name" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file",
  requires = { "pki" },
  provides = { "kubeconfig" },
  prepare = prepare,
  children = {
    { name = "admin", desc = "Generate a kubeconfig file for the admin to use and for kubeadm itself", run = run("admin") },
    { name = "super-admin", desc = "Generate a kubeconfig file for the super-admin", run = run("super-admin") },
    { name = "kubelet", desc = "Generate a kubeconfig file for the kubelet to use *only* for cluster bootstrapping purposes", run = run("kubelet") },
    { name = "controller-manager", desc = "Generate a kubeconfig file for the controller manager to use", run = run("controller-manager") },
    { name = "scheduler", desc = "Generate a kubeconfig file for the scheduler to use", run = run("scheduler") },
  },
}
