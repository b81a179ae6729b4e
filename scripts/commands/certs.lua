-- `moonadm certs check-expiration|renew|certificate-key|generate-csr`, kubeadm's `certs` family.
local pki = require "moonadm.pki"
local common = require "commands.common"
local globals = require "framework.globals"
local config = require "config"
local context = require "framework.context"
local flags_mod = require "framework.argv"
local fs = require "moonadm.fs"
local log = require "framework.log"
local certlist = require "pki.certlist"
local expiration = require "pki.expiration"
local kubeconfig = require "pki.kubeconfigs"
local tree = require "pki.tree"
local kube_client = require "kube.client"
local lazy = require "framework.lazy"
local upload_config = lazy.require "cluster.upload_config" -- --kubeconfig without --config alone reads the cluster
local cli = require "framework.cli"
local duration = require "config.duration"
local restart_mod = lazy.require "renewal.restart" -- renew --if-expiring-within | --restart
local flowcmd = require "commands.flowcmd"
local rotate_data = lazy.require "flows.rotate_ca.data"
local rotate_stages = lazy.require "rotation.stages"
local cadmin = lazy.require "cluster.admin"
local cjson = lazy.require "cjson"

local M = {}

local CERT_DIR = { name = "cert-dir", type = "string", help = "The path where to save the certificates (default \"/etc/kubernetes/pki\")" }
local CONFIG = { name = "config", type = "string", help = "Path to a kubeadm configuration file." }
local KDIR = { name = "kubeconfig-dir", type = "string", default = "/etc/kubernetes", help = "The path where to save the kubeconfig file." }
local KUBECONFIG = { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf",
  help = "The kubeconfig file to use when talking to the cluster: given without --config, the cluster's ClusterConfiguration is read through it" }
-- kubectl's printer flags: they apply to template outputs, which moonadm does not print; the
-- objects moonadm prints carry no managedFields.
local PRINT_FLAGS = {
  { name = "allow-missing-template-keys", type = "bool", default = true, help = "If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats." },
  { name = "show-managed-fields", type = "bool", help = "If true, keep the managedFields when printing objects in JSON or YAML format." },
}

local subs = {
  { "check-expiration", "Check certificates expiration for a Kubernetes cluster",
    { CERT_DIR, CONFIG, KDIR, KUBECONFIG, PRINT_FLAGS[1], PRINT_FLAGS[2], { name = "output", short = "o", type = "string", default = "text",
      help = "Output format. One of: text|json|yaml." },
    { name = "warn-within", type = "string", help = "moonadm: exit 3 when a certificate or CA has less than this duration left (e.g. 720h), for monitoring" } } },
  { "renew", "Renew certificates for a Kubernetes cluster", { CERT_DIR, CONFIG, KDIR, KUBECONFIG,
    { name = "if-expiring-within", type = "string", help = "moonadm: renew only the certificates with less than this duration left (e.g. 720h), then restart the control-plane static Pods that read them, one at a time" },
    { name = "restart", type = "bool", help = "moonadm: restart this node's control-plane static Pods whose certificates were renewed, one at a time, waiting for each (default: on with --if-expiring-within)" },
    { name = "force", type = "bool", help = "moonadm: restart etcd even when the other members would lack a quorum meanwhile" } } },
  { "certificate-key", "Generate certificate keys", {} },
  { "generate-csr", "Generate keys and certificate signing requests", { CERT_DIR, CONFIG, KDIR } },
}

local RENEW_LONG <const> = [[
Renewals run unconditionally, regardless of certificate expiration date; extra attributes such as SANs will
be based on the existing file/certificates, there is no need to resupply them.

Renewal by default tries to use the certificate authority in the local PKI managed by moonadm; as alternative
it is possible to use K8s certificate API for certificate renewal, or as a last option, to generate a CSR request.

After renewal, in order to make changes effective, is required to restart control-plane components and
eventually re-distribute the renewed certificate in case the file is used elsewhere.]]

-- `certs rotate-ca`: a flow (scripts/flows/rotate-ca.lua) run on each control plane in turn.
local ROTATE_KUBECONFIG = { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf", help = "The kubeconfig file to use when talking to the cluster" }
local ROTATE_FLAGS = {
  { name = "ca", type = "string", help = "moonadm: the CAs a new rotation replaces: front-proxy, etcd (a comma list), or all. Not needed to go on with the rotation under way" },
  { name = "certificate-key", type = "string", help = "moonadm: the key `certs rotate-ca` printed when it started the rotation: it opens the new CA keys on the other control planes" },
  ROTATE_KUBECONFIG,
  { name = "force", type = "bool", help = "moonadm: restart etcd even when the other members would lack a quorum meanwhile (a cluster of two: the API pauses while it restarts)" },
}
local ROTATE <const> = { name = "rotate-ca", flow = "rotate-ca", kind = "upgrade", flags = ROTATE_FLAGS,
  cmd = "certs rotate-ca", cmd_words = { "certs", "rotate-ca" },
  desc = "moonadm: Rotate the cluster's certificate authorities with the API up, one control plane at a time",
  long = "Replaces a CA on every control plane, following Kubernetes' manual CA rotation: every control plane first\n" ..
    "trusts the old and the new CA, then signs with the new one and reissues its certificates, then trusts the new\n" ..
    "one alone; each stage waits until every control plane took the one before. Run it on each control plane in\n" ..
    "turn, again and again (the first run with --ca, the others with the --certificate-key it printed): each run\n" ..
    "takes this node as far as the others allow and says where to run it next. `certs rotate-ca status` shows\n" ..
    "every node's stage (docs/rotate-ca.md).",
  prepare = function(ctx) rotate_data.prepare(ctx) end, prepare_data = { "rotation_node" } }
local STATUS_FLAGS = {
  ROTATE_KUBECONFIG,
  { name = "output", short = "o", type = "string", default = "text", help = "Output format. One of: text|json." },
}

local function sub_flags(name)
  for _, s in ipairs(subs) do if s[1] == name then return s[3] end end
end

M.help = {
  [""] = { short = "Commands related to handling Kubernetes certificates", runnable = false, flags = {} },
  ["check-expiration"] = { short = "Check certificates expiration for a Kubernetes cluster",
    long = "Checks expiration for the certificates in the local PKI managed by moonadm.", flags = sub_flags("check-expiration") },
  ["renew"] = { short = "Renew certificates for a Kubernetes cluster", runnable = false, flags = {},
    long = "This command is not meant to be run on its own. See list of available subcommands." },
  ["certificate-key"] = { short = "Generate certificate keys", flags = {},
    long = "This command will print out a secure randomly-generated certificate key that can be used with\n" ..
      "the \"init\" command.\n\nYou can also use \"moonadm init --upload-certs\" without specifying a certificate key and it will\n" ..
      "generate and print one for you." },
  ["generate-csr"] = { short = "Generate keys and certificate signing requests", flags = sub_flags("generate-csr"),
    long = "Generates keys and certificate signing requests (CSRs) for all the certificates required to run the control plane.\n" ..
      "This command also generates partial kubeconfig files with private key data in the \"users > user > client-key-data\" field,\n" ..
      "and for each kubeconfig file an accompanying \".csr\" file is created.\n\n" ..
      "This command is designed for use in external CA mode. It generates CSRs which you can then submit to your\n" ..
      "external certificate authority for signing.\n\nThe PEM encoded signed certificates should then be saved alongside the key files,\n" ..
      "using \".crt\" as the file extension, or in the case of kubeconfig files, the PEM encoded signed certificate\n" ..
      "should be base64 encoded and added to the kubeconfig file in the \"users > user > client-certificate-data\" field.",
    example = "  # The following command will generate keys and CSRs for all control-plane certificates and kubeconfig files:\n" ..
      "  moonadm certs generate-csr --kubeconfig-dir /tmp/etc-k8s --cert-dir /tmp/etc-k8s/pki" },
}

-- `certs renew NAME`: one subcommand per certificate and kubeconfig the default cluster has, and `all`.
local function renew_names()
  local cfg = assert(config.load { kind = "init", files = {}, flags = {} })
  local names = { { name = "all", short = "Renew all available certificates" } }
  for _, c in ipairs(certlist.for_cluster(cfg.cluster, { sa = false })) do
    if not c.is_ca then names[#names + 1] = { name = c.name, short = ("Renew the %s"):format(c.long or c.name) } end
  end
  for _, k in ipairs(kubeconfig.list) do
    if k.renew then names[#names + 1] = { name = k.file, short = ("Renew the certificate embedded in the kubeconfig file %s"):format(k.file) } end
  end
  table.sort(names, function(a, b) return a.name < b.name end)
  return names
end
M.help["renew"].children = renew_names

local rotate_help, rotate_help_for = flowcmd.help_tree(ROTATE)
for k, v in pairs(rotate_help) do M.help["rotate-ca" .. (k ~= "" and (" " .. k) or "")] = v end
M.help["rotate-ca status"] = { short = "Show the CA rotation under way: its CAs and every control plane's stage",
  flags = STATUS_FLAGS, children = {} }

function M.help_for(words)
  if words[1] == "rotate-ca" then return rotate_help_for(table.move(words, 2, #words, 1, {})) end
  if words[1] ~= "renew" or #words ~= 2 then return nil end
  for _, n in ipairs(renew_names()) do
    if n.name == words[2] then return { short = n.short, long = n.short .. ".\n\n" .. RENEW_LONG, flags = sub_flags("renew"), children = {} } end
  end
end

-- --kubeconfig without --config: the cluster's ClusterConfiguration (certificatesDir, SANs, ...), as
-- kubeadm reads it; unreadable, a warning and the defaults, as kubeadm falls back.
local function cluster_config(cfg, path)
  local c, err = kube_client.from_kubeconfig(fs.path(path), { timeout = 10 })
  local cluster
  if c then cluster, err = upload_config.read_kubeadm(c) end
  if not cluster then
    log.warn("Error reading configuration from the Cluster (%s). Falling back to default configuration", tostring(err))
    return
  end
  cfg.cluster = cluster
end

-- Flags, config and a context for a subcommand.
local function setup(spec, argv)
  local fspec = globals.flags(globals.global, spec)
  local flags, args, set = flags_mod.parse(fspec, argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  local cfg, err = config.load { kind = "init", files = flags.config and { flags.config } or {}, flags = {} }
  if not cfg then error(err, 0) end
  if not flags.config and set.kubeconfig then cluster_config(cfg, flags.kubeconfig) end
  for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
  if flags["cert-dir"] and flags["cert-dir"] ~= "" then cfg.cluster.certificatesDir = flags["cert-dir"] end
  local ctx = context.new { command = "certs", cfg = cfg, gates = cfg.gates or {}, flags = flags, flags_set = set,
    root = flags.root }
  return flags, args, ctx, tree.env(ctx)
end

local function kdir(flags) return ((flags["kubeconfig-dir"] or "/etc/kubernetes"):gsub("/+$", "")) end

-- A duration flag's value in seconds (Go's syntax, as kubeadm's duration flags); raises on bad text.
local function duration_flag(flags, name)
  local v = flags[name]
  if v == nil or v == "" then return nil end
  local s = duration.seconds(v)
  if not s or s < 0 then
    error(("invalid argument %q for \"--%s\" flag: a duration such as 720h or 30m is expected"):format(v, name), 0)
  end
  return s
end

-- Exit code of `check-expiration --warn-within`: something is due (docs/pki.md).
M.EXIT_DUE = 3

local function check_expiration(spec, argv)
  local flags, _, _, E = setup(spec, argv)
  local within = duration_flag(flags, "warn-within")
  local certs, cas = expiration.collect(E, kdir(flags))
  local o = flags.output or "text"
  if o == "json" then io.stdout:write(expiration.json(certs, cas))
  elseif o == "yaml" then io.stdout:write(expiration.yaml(certs, cas))
  elseif o == "text" or o == "" then io.stdout:write(expiration.text(certs, cas))
  else error(("unable to match a printer suitable for the output format %q, allowed formats are: json,text,yaml"):format(o), 0) end
  if within then
    local due = {}
    for _, list in ipairs { certs, cas } do
      for _, r in ipairs(list) do
        if r.residual and r.residual < within then due[#due + 1] = r.name end
      end
    end
    if #due > 0 then
      log.warn("%d certificate(s) expire within %s: %s (moonadm certs renew all --if-expiring-within %s renews them)",
        #due, flags["warn-within"], table.concat(due, ", "), flags["warn-within"])
      return M.EXIT_DUE
    end
  end
  return 0
end

-- --if-expiring-within: the targets due, each one not due named with its time left.
local function due_targets(E, targets, within, text)
  local due, rest = expiration.due(E, targets, within)
  for _, r in ipairs(rest) do
    io.stdout:write(("%s is not due: %s left, more than %s\n"):format(r.name, duration.format_seconds(r.residual), text))
  end
  return due
end

local function renew(spec, argv)
  local flags, args, ctx, E = setup(spec, argv)
  local names = {}
  for _, r in ipairs((expiration.rows(E, kdir(flags)))) do names[#names + 1] = r.name end
  if not args[1] then
    log.result("Renew certificates for a Kubernetes cluster\n\nUsage:\n  moonadm certs renew <" ..
      table.concat(names, "|") .. "|all> [flags]")
    return 1
  end
  local within = duration_flag(flags, "if-expiring-within")
  local set = ctx.flags_set or {}
  local restart = flags.restart or (within ~= nil and not set.restart)
  common.take_root(flags, { cert_dir = E.dir }) -- it rewrites certificates and kubeconfigs: one moonadm at a time
  local targets = expiration.targets(E, kdir(flags), args[1])
  if within then targets = due_targets(E, targets, within, flags["if-expiring-within"]) end
  -- what will need a restart is written down before anything is renewed (a killed run's is kept)
  local to_restart = {}
  if restart then
    local renewing = {}
    for _, r in ipairs(targets) do renewing[#renewing + 1] = r.name end
    to_restart = restart_mod.mark(restart_mod.components(renewing))
  end
  local lines = expiration.renew(E, targets)
  for _, l in ipairs(lines) do io.stdout:write(l, "\n") end
  if restart then
    local done, skipped = restart_mod.run(ctx, to_restart, { force = flags.force })
    if #done > 0 then io.stdout:write(("\nRestarted %s, one at a time.\n"):format(table.concat(done, ", "))) end
    if #skipped > 0 then return 1 end
  elseif args[1] == "all" and #targets > 0 then
    io.stdout:write("\nDone renewing certificates. You must restart the kube-apiserver, kube-controller-manager, " ..
      "kube-scheduler and etcd, so that they can use the new certificates.\n")
  end
  return 0
end

-- Keys and CSRs for an external CA: <cert-dir>/<base>.key+.csr for every leaf, and for every
-- kubeconfig a <file>.csr next to a kubeconfig holding the key (no CA, no certificate yet).
local function generate_csr(spec, argv)
  local flags, _, ctx, E = setup(spec, argv)
  common.take_root(flags, { cert_dir = E.dir, dry_run = ctx.dry_run }) -- it writes keys: one moonadm at a time
  local kd = kdir(flags)
  local jobs = {}
  for _, c in ipairs(certlist.for_cluster(E.cluster, { sa = false, cas = false })) do
    jobs[#jobs + 1] = { label = c.base, key = tree.path(E, c.base, "key"), csr = tree.path(E, c.base, "csr"),
      spec = function() local s = tree.spec(E, c) return { cn = s.cn, o = s.o, dns = s.dns, ips = s.ips } end }
  end
  for _, k in ipairs(kubeconfig.list) do
    jobs[#jobs + 1] = { label = k.file, conf = kd .. "/" .. k.file, csr = kd .. "/" .. k.file .. ".csr", kc = k,
      spec = function() return { cn = k.user(E), o = k.o } end }
  end
  -- check what exists, compute every spec (SANs may need the advertise address) before writing
  local todo, algs = {}, {}
  for _, j in ipairs(jobs) do
    local csr = ctx:read(j.csr)
    if csr then
      local ok, err = pki.parse_csr(csr)
      if not ok then error(("%s CSR already exists but has errors: %s: %s"):format(j.label, j.csr, err), 0) end
      j.existing = true
    else
      j.s = j.spec()
      todo[#todo + 1] = j
      algs[#algs + 1] = E.alg
    end
  end
  local keys, kerr = pki.generate_keys(algs)
  if not keys then error("generating private keys: " .. kerr, 0) end
  for i, j in ipairs(todo) do
    local csr, err = pki.create_csr(keys[i], j.s)
    if not csr then error(("creating the CSR of %s: %s"):format(j.label, err), 0) end
    j.csr_pem, j.k = csr, keys[i]
    if j.kc then
      j.text = kubeconfig.encode { server = kubeconfig.server(E, j.kc), cluster = kubeconfig.cluster_name(E),
        user = j.s.cn, key_pem = assert(keys[i]:pem()) }
    end
  end
  local printed = {}
  for _, j in ipairs(jobs) do
    local dir = j.kc and kd or E.dir
    if not printed[dir] then
      io.stdout:write(("generating keys and CSRs in %s\n"):format(dir))
      printed[dir] = true
    end
    if j.existing then
      io.stdout:write(("  %s (using the existing CSR)\n"):format(j.label))
    else
      if j.kc then ctx:write(j.conf, j.text, tonumber("600", 8))
      else ctx:write(j.key, assert(j.k:pem()), tonumber("600", 8)) end
      ctx:write(j.csr, j.csr_pem, tonumber("600", 8))
      io.stdout:write(("  %s\n"):format(j.label))
    end
  end
  return 0
end

-- `certs rotate-ca status`: the rotation under way, from the cluster.
local function rotate_status(argv)
  local flags, args = flags_mod.parse(globals.flags(globals.global, STATUS_FLAGS), argv)
  if not flags then error(args, 0) end
  if #args > 0 then error(("unknown argument %q for \"moonadm certs rotate-ca status\": it takes none"):format(args[1]), 0) end
  globals.setup(flags)
  if flags.output ~= "text" and flags.output ~= "json" then
    error(("--output %q: one of text, json"):format(tostring(flags.output)), 0)
  end
  local ctx = context.new { command = "certs", cfg = {}, flags = flags, flags_set = { kubeconfig = true }, root = flags.root }
  local st = rotate_stages.status(cadmin.client(ctx))
  if flags.output == "json" then
    local doc = st or {}
    doc.rotation = st ~= nil -- under way or not, in both shapes
    io.stdout:write(cjson.encode(doc), "\n")
  elseif not st then
    io.stdout:write("No CA rotation is under way.\n")
  else
    io.stdout:write(("Rotating the %s CA(s): started by %s at %s%s\n"):format(table.concat(st.cas, ", "), tostring(st.by),
      tostring(st.started), st.old_key_kept and "" or " (the old CA key was gone)"))
    io.stdout:write("NODE\tSTAGE\n")
    for _, n in ipairs(st.nodes) do io.stdout:write(("%s\t%s\n"):format(n.name, n.stage)) end
  end
  return 0
end

function M.main(argv)
  local name = argv[1]
  local rest = table.move(argv, 2, #argv, 1, {})
  if not name then
    log.result(cli.help_text { "certs" })
    return 0
  end
  if name == "rotate-ca" then
    if rest[1] == "status" then return rotate_status(table.move(rest, 2, #rest, 1, {})) end
    return flowcmd.main(setmetatable({ argv = rest }, { __index = ROTATE }))
  end
  for _, s in ipairs(subs) do
    if s[1] == name then
      if name == "check-expiration" then return check_expiration(s[3], rest)
      elseif name == "renew" then return renew(s[3], rest)
      elseif name == "generate-csr" then return generate_csr(s[3], rest)
      else
        local flags, args = flags_mod.parse(globals.flags(globals.global, s[3]), rest)
        if not flags then error(args, 0) end
        io.stdout:write(pki.certificate_key(), "\n")
        return 0
      end
    end
  end
  error(('unknown command "%s" for "moonadm certs"\nRun \'moonadm certs --help\' for usage.'):format(name), 0)
end

return M
