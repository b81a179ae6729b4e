-- `moonadm upgrade plan|apply|node`. apply and node run their flows (scripts/flows/upgrade-*.lua)
-- after reading the cluster's configuration (scripts/flows/upgrade/data.lua); plan prints the versions
-- and targets (scripts/upgrade/plan.lua) with -o text|json|yaml.
local globals = require "framework.globals"
local config = require "config"
local flags_mod = require "framework.argv"
local flowcmd = require "commands.flowcmd"
local log = require "framework.log"
local data = require "flows.upgrade.data"
local capi = require "cluster.api"
local plan_mod = require "upgrade.plan"
local moonadm_yaml = require "moonadm.yaml"
local fs = require "moonadm.fs"
local manifests = require "manifests"
local framework_context = require "framework.context"
local upgrade_version = require "upgrade.version"
local difflib = require "upgrade.difflib"
local cli = require "framework.cli"

local M = {}

local shared = {
  { name = "certificate-renewal", type = "bool", default = true, help = "Perform the renewal of certificates used by component changed during upgrades" },
  { name = "etcd-upgrade", type = "bool", default = true, help = "Perform the upgrade of etcd" },
  { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf", help = "The kubeconfig file to use when talking to the cluster" },
  { name = "patches", type = "string", help = "Path to a directory that contains files named \"target[suffix][+patchtype].extension\"" },
}

M.apply_flags = {
  { name = "allow-experimental-upgrades", type = "bool", help = "Show unstable versions of Kubernetes as an upgrade alternative" },
  { name = "allow-release-candidate-upgrades", type = "bool", help = "Show release candidate versions of Kubernetes as an upgrade alternative" },
  { name = "force", short = "f", type = "bool", help = "Force upgrading although some requirements might not be met" },
  { name = "print-config", type = "bool", help = "Specifies whether the configuration file that will be used in the upgrade should be printed or not" },
  { name = "yes", short = "y", type = "bool", help = "Perform the upgrade and do not prompt for confirmation (non-interactive mode)" },
}
for _, f in ipairs(shared) do M.apply_flags[#M.apply_flags + 1] = f end

M.plan_flags = {
  { name = "config", type = "string", help = "Path to a kubeadm configuration file" },
  { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf", help = "The kubeconfig file to use when talking to the cluster" },
  { name = "output", short = "o", type = "string", default = "text", help = "Output format: text|json|yaml" },
  { name = "allow-experimental-upgrades", type = "bool", help = "Show unstable versions of Kubernetes as an upgrade alternative" },
  { name = "allow-release-candidate-upgrades", type = "bool", help = "Show release candidate versions of Kubernetes as an upgrade alternative" },
  { name = "etcd-upgrade", type = "bool", default = true, help = "Perform the upgrade of etcd" },
  { name = "print-config", type = "bool", help = "Specifies whether the configuration file that will be used in the upgrade should be printed or not" },
  { name = "ignore-preflight-errors", type = "list", help = "A list of checks whose errors will be shown as warnings" },
  -- kubectl's printer flags: for template outputs, which moonadm does not print; no managedFields either way
  { name = "allow-missing-template-keys", type = "bool", default = true, help = "If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats." },
  { name = "show-managed-fields", type = "bool", help = "If true, keep the managedFields when printing objects in JSON or YAML format." },
}

-- (the run's client, --kubeconfig's file when given, is cluster.admin.client's)
local function prepare(apply)
  return function(ctx)
    data.prepare(ctx, { apply = apply })
  end
end

local APPLY <const> = { name = "upgrade-apply", flow = "upgrade-apply", kind = "upgrade", flags = M.apply_flags,
  cmd = "upgrade apply", cmd_words = { "upgrade", "apply" }, args = "[version]", desc = "Upgrade your Kubernetes cluster to the specified version",
  prepare = prepare(true), prepare_data = data.DATA }
local NODE <const> = { name = "upgrade-node", flow = "upgrade-node", kind = "upgrade", flags = shared,
  cmd = "upgrade node", cmd_words = { "upgrade", "node" }, desc = "Upgrade commands for a node in the cluster",
  prepare = prepare(false), prepare_data = data.DATA }

M.help = {
  [""] = { short = "Upgrade your cluster smoothly to a newer version with this command", runnable = false, flags = {} },
  ["plan"] = { short = "Check which versions are available to upgrade to and validate whether your current cluster is upgradeable.",
    long = "Check which versions are available to upgrade to and validate whether your current cluster is upgradeable.\n" ..
      "This command can only run on the control plane nodes where the kubeconfig file \"admin.conf\" exists.\n" ..
      "To skip the internet check, pass in the optional [version] parameter.",
    args = "[version]", flags = M.plan_flags },
}
-- `upgrade diff` (kubeadm's flags: --config, --kubeconfig, -c/--context-lines; v1.35 has no
-- --api-server-manifest & co any more: the manifests are the ones under /etc/kubernetes/manifests).
M.diff_flags = {
  { name = "config", type = "string", help = "Path to a kubeadm configuration file." },
  { name = "context-lines", short = "c", type = "int", default = 3, help = "How many lines of context in the diff" },
  { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf", help = "The kubeconfig file to use when talking to the cluster. If the flag is not set, a set of standard locations can be searched for an existing kubeconfig file." },
}
M.help["diff"] = { short = "Show what differences would be applied to existing static pod manifests. See also: moonadm upgrade apply --dry-run",
  args = "[version]", flags = M.diff_flags }

local sub_help_for = {}
for word, opts in pairs { apply = APPLY, node = NODE } do
  local tbl, help_for = flowcmd.help_tree(opts)
  for k, v in pairs(tbl) do M.help[word .. (k ~= "" and (" " .. k) or "")] = v end
  sub_help_for[word] = help_for
end

function M.help_for(words)
  local f = sub_help_for[words[1]]
  return f and f(table.move(words, 2, #words, 1, {}))
end

function M.plan(argv)
  local spec = globals.flags(globals.global, M.plan_flags)
  local flags, args, set = flags_mod.parse(spec, argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  local given = {}
  for name in pairs(set) do if name ~= "output" and name ~= "kubeconfig" then given[name] = flags[name] end end
  local cfg, err = config.load { kind = "upgrade", files = flags.config and { flags.config } or {}, flags = given, args = args }
  if not cfg then error(err, 0) end
  for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
  local p = (cfg.upgrade or {}).plan or {}
  local out = flags.output or "text"
  if out ~= "text" and out ~= "json" and out ~= "yaml" then
    error(("unable to match a printer suitable for the output format %q, allowed formats are: json,text,yaml"):format(out), 0)
  end
  local c = capi.from_kubeconfig({ cfg = {} }, flags.kubeconfig)
  local facts, ferr = plan_mod.collect(c)
  if not facts then error("[upgrade/versions] " .. ferr, 0) end
  local plan = plan_mod.build(facts, { target = p.kubernetesVersion or args[1],
    allow_experimental = p.allowExperimentalUpgrades, allow_rc = p.allowRCUpgrades })
  if out == "json" then io.stdout:write(plan_mod.json(plan))
  elseif out == "yaml" then io.stdout:write(plan_mod.yaml(plan))
  else
    if flags["print-config"] then
      log.info("[upgrade/config] Configuration used:")
      log.result(moonadm_yaml.encode(config.cluster_for_upload(facts.cluster)))
    end
    io.stdout:write(plan_mod.text(plan))
  end
  return #plan.policy.mandatory == 0 and 0 or 1
end

-- `upgrade diff [version]`: for kube-apiserver, kube-controller-manager and kube-scheduler, the
-- unified diff (go-difflib's, as kubeadm prints it) between the manifest on disk and the one
-- `upgrade apply` would write for the version (the argument, else diff.kubernetesVersion of the
-- UpgradeConfiguration, else the cluster's). As kubeadm's, no patches are applied.
function M.diff(argv)
  local spec = globals.flags(globals.global, M.diff_flags)
  local flags, args, set = flags_mod.parse(spec, argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  if #args > 1 then error(("accepts at most 1 arg(s), received %d"):format(#args), 0) end
  local comps = { "kube-apiserver", "kube-controller-manager", "kube-scheduler" }
  for _, comp in ipairs(comps) do
    local path = manifests.path(comp)
    local st = fs.stat(path)
    if not st then
      error(("the manifest file %q does not exist: stat %s: no such file or directory"):format(path, fs.path(path)), 0)
    end
    if st.type == "directory" then error(("%q is a directory"):format(path), 0) end
  end
  local cfg, err = config.load { kind = "upgrade", files = flags.config and { flags.config } or {}, flags = {} }
  if not cfg then error(err, 0) end
  for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
  local d = (cfg.upgrade or {}).diff or {}
  local ctx = framework_context.new { command = "upgrade-diff", cfg = cfg, gates = cfg.gates or {}, flags = flags,
    flags_set = set, root = flags.root }
  ctx.data.client = capi.from_kubeconfig({ cfg = {} }, flags.kubeconfig)
  -- kubeadm's FetchInitConfigurationFromCluster lines, with the command's prefix (prepare's own
  -- "[upgrade/config]" line is not printed)
  io.stdout:write('[upgrade/diff] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...\n',
    "[upgrade/diff] Use 'moonadm init phase upload-config kubeadm --config your-config-file' to re-upload it.\n")
  local out = log.out
  log.out = { write = function() end, flush = function() end }
  local ok, prep_err = pcall(data.prepare, ctx, { apply = false })
  log.out = out
  if not ok then error(prep_err, 0) end
  ctx.cfg.init.patches = nil
  local target = args[1] or (d.kubernetesVersion ~= "" and d.kubernetesVersion) or ctx.cfg.cluster.kubernetesVersion
  if not target or target == "" then error("missing one or more required arguments. Required arguments: [version]", 0) end
  local v, perr = upgrade_version.parse(target)
  if not v then error(perr, 0) end
  ctx.cfg.cluster.kubernetesVersion = target
  -- kubeadm's ValueFromFlagsOrConfig: the flag when given, else the config's diff.contextLines,
  -- which has no default, so without both the diff has no context lines (the flag's "3" only shows)
  local context_lines = set["context-lines"] and flags["context-lines"] or d.contextLines or 0
  for _, comp in ipairs(comps) do
    local path = manifests.path(comp)
    local old, rerr = fs.read(path)
    if not old then error(("reading %s: %s"):format(path, tostring(rerr)), 0) end
    local new = manifests.encode(manifests.builders[comp](ctx))
    io.stdout:write(difflib.unified(old, new, path, "new manifest", context_lines))
  end
  return 0
end

function M.main(argv)
  local sub = argv[1]
  local rest = table.move(argv, 2, #argv, 1, {})
  if sub == "apply" then
    return flowcmd.main(setmetatable({ argv = rest }, { __index = APPLY }))
  elseif sub == "node" then
    return flowcmd.main(setmetatable({ argv = rest }, { __index = NODE }))
  elseif sub == "plan" then
    return M.plan(rest)
  elseif sub == "diff" then
    return M.diff(rest)
  end
  io.stdout:write(cli.help_text { "upgrade" })
  return sub and 1 or 0
end

return M
