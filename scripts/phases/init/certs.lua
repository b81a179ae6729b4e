-- init phase "certs": Certificate generation.
-- The parent's run_if plans every sub-phase that will run (reading and checking the whole tree, so
-- a bad tree fails before any file is written) and generates all the keys they need at once, in
-- parallel; each sub-phase then re-checks its own certificate on disk and writes it.
local certlist = require "pki.certlist"
local tree = require "pki.tree"
local log = require "log"

local function skipped(ctx)
  local set = {}
  local lists = { ctx.flags and ctx.flags["skip-phases"], ctx.cfg.init and ctx.cfg.init.skipPhases }
  for _, l in ipairs(lists) do
    for _, p in ipairs(l or {}) do set[p] = true end
  end
  return set
end

-- Whole-tree planning and key generation; a planning error is kept and raised by the first
-- sub-phase that runs, so that it reads "error execution phase certs/<name>: ...".
local function prepare(ctx)
  local ok, err = pcall(function()
    local E = tree.env(ctx)
    log.info('[certs] Using certificateDir folder "%s"', E.dir)
    local skip = skipped(ctx)
    local entries = {}
    for _, c in ipairs(certlist.list) do
      if not skip["certs"] and not skip["certs/" .. c.name] then entries[#entries + 1] = c end
    end
    tree.pregenerate(E, tree.plan(E, entries))
  end)
  if not ok then ctx.data.pki_plan_error = err end
  return true
end

local function run(name)
  return function(ctx)
    local perr = ctx.data.pki_plan_error
    if perr then
      ctx.data.pki_plan_error = nil
      error(perr, 0)
    end
    local E = tree.env(ctx)
    local c = certlist.by_name[name]
    tree.apply(E, tree.plan(E, { c })[1])
  end
end

local function leaf(name, desc)
  return { name = name, desc = desc, run = run(name) }
end

return {
  name = "certs",
  flags = { "apiserver-advertise-address", "apiserver-cert-extra-sans", "cert-dir", "config", "control-plane-endpoint", "dry-run", "kubernetes-version", "service-cidr", "service-dns-domain" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Certificate generation",
  provides = { "pki" },
  run_if = prepare,
  children = {
    leaf("ca", "Generate the self-signed Kubernetes CA to provision identities for other Kubernetes components"),
    leaf("apiserver", "Generate the certificate for serving the Kubernetes API"),
    leaf("apiserver-kubelet-client", "Generate the certificate for the API server to connect to kubelet"),
    leaf("front-proxy-ca", "Generate the self-signed CA to provision identities for front proxy"),
    leaf("front-proxy-client", "Generate the certificate for the front proxy client"),
    leaf("etcd-ca", "Generate the self-signed CA to provision identities for etcd"),
    leaf("etcd-server", "Generate the certificate for serving etcd"),
    leaf("etcd-peer", "Generate the certificate for etcd nodes to communicate with each other"),
    leaf("etcd-healthcheck-client", "Generate the certificate for liveness probes to healthcheck etcd"),
    leaf("apiserver-etcd-client", "Generate the certificate the apiserver uses to access etcd"),
    leaf("sa", "Generate a private key for signing service account tokens along with its public key"),
  },
}
