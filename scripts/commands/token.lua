-- `moonadm token create|list|delete|generate`: kubeadm's `token` family over the API client
-- (scripts/cluster/tokens.lua): the same Secrets, flags and output formats.
local globals = require "framework.globals"
local config = require "config"
local flags_mod = require "framework.argv"
local fs = require "moonadm.fs"
local log = require "framework.log"
local tokens = require "cluster.tokens"
local joincmd = require "cluster.join_command"
local cli = require "framework.cli"
local kube_client = require "kube.client"
local kube_kubeconfig = require "kube.kubeconfig"
local kube_json = require "kube.json"
local moonadm_yaml = require "moonadm.yaml"

local M = {}

local KUBECONFIG = { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf",
  help = "The kubeconfig file to use when talking to the cluster. If the flag is not set, a set of standard locations can be searched for an existing kubeconfig file." }
local DRY = { name = "dry-run", type = "bool", help = "Whether to enable dry-run mode or not" }

local subs = {
  { "create", "Create bootstrap tokens on the server", {
    { name = "certificate-key", type = "string", help = "When used together with '--print-join-command', print the full 'moonadm join' flag needed to join the cluster as a control-plane. To create a new certificate key you must use 'moonadm init phase upload-certs --upload-certs'." },
    { name = "config", type = "string", help = "Path to a kubeadm configuration file." },
    { name = "description", type = "string", help = "A human friendly description of how this token is used." },
    { name = "groups", type = "list", default = { tokens.DEFAULT_GROUP }, help = "Extra groups that this token will authenticate as when used for authentication. Must match \"\\\\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\\\\z\"" },
    { name = "print-join-command", type = "bool", help = "Instead of printing only the token, print the full 'moonadm join' flag needed to join the cluster using the token." },
    { name = "ttl", type = "string", default = "24h0m0s", help = "The duration before the token is automatically deleted (e.g. 1s, 2m, 3h). If set to '0', the token will never expire" },
    { name = "usages", type = "list", default = { "signing", "authentication" }, help = "Describes the ways in which this token can be used. You can pass --usages multiple times or provide a comma separated list of options. Valid options: [signing,authentication]" },
  } },
  { "delete", "Delete bootstrap tokens on the server", {} },
  { "generate", "Generate and print a bootstrap token, but do not create it on the server", {} },
  { "list", "List bootstrap tokens on the server", {
    { name = "output", short = "o", type = "string", default = "text", help = "Output format. One of: text|json|yaml|go-template|go-template-file|template|templatefile|jsonpath|jsonpath-as-json|jsonpath-file." },
    { name = "allow-missing-template-keys", type = "bool", default = true, help = "If true, ignore any errors in templates when a field or map key is missing in the template." },
    { name = "show-managed-fields", type = "bool", help = "If true, keep the managedFields when printing objects in JSON or YAML format." },
  } },
}

local TOKEN_LONG <const> = [[
This command manages bootstrap tokens. It is optional and needed only for advanced use cases.

In short, bootstrap tokens are used for establishing bidirectional trust between a client and a server.
A bootstrap token can be used when a client (for example a node that is about to join the cluster) needs
to trust the server it is talking to. Then a bootstrap token with the "signing" usage can be used.
bootstrap tokens can also function as a way to allow short-lived authentication to the API Server
(the token serves as a way for the API Server to trust the client), for example for doing the TLS Bootstrap.

What is a bootstrap token more exactly?
 - It is a Secret in the kube-system namespace of type "bootstrap.kubernetes.io/token".
 - A bootstrap token must be of the form "[a-z0-9]{6}.[a-z0-9]{16}". The former part is the public token ID,
   while the latter is the Token Secret and it must be kept private at all circumstances!
 - The name of the Secret must be named "bootstrap-token-(token-id)".

You can read more about bootstrap tokens here:
  https://kubernetes.io/docs/admin/bootstrap-tokens/]]

local LONGS <const> = {
  create = [[
This command will create a bootstrap token for you.
You can specify the usages for this token, the "time to live" and an optional human friendly description.

The [token] is the actual token to write.
This should be a securely generated random token of the form "[a-z0-9]{6}.[a-z0-9]{16}".
If no [token] is given, moonadm will generate a random token instead.]],
  delete = [[
This command will delete a list of bootstrap tokens for you.

The [token-value] is the full Token of the form "[a-z0-9]{6}.[a-z0-9]{16}" or the
Token ID of the form "[a-z0-9]{6}" to delete.]],
  generate = [[
This command will print out a randomly-generated bootstrap token that can be used with
the "init" and "join" commands.

You don't have to use this command in order to generate a token. You can do so
yourself as long as it is in the format "[a-z0-9]{6}.[a-z0-9]{16}". This
command is provided for convenience to generate tokens in the given format.

You can also use "moonadm init" without specifying a token and it will
generate and print one for you.]],
  list = "This command will list all bootstrap tokens for you.",
}
local ARGS <const> = { create = "[token]", delete = "[token-value] ..." }

-- The flags every token subcommand has (kubeadm's persistent flags of `token`).
local TOKEN_FLAGS <const> = { KUBECONFIG, DRY }

M.help = { [""] = { short = "Manage bootstrap tokens", long = TOKEN_LONG, flags = TOKEN_FLAGS } }
for _, s in ipairs(subs) do
  M.help[s[1]] = { short = s[2], long = LONGS[s[1]], args = ARGS[s[1]], flags = globals.flags(TOKEN_FLAGS, s[3]) }
end

local function usage() return cli.help_text { "token" } end

local function client(flags)
  local path = flags.kubeconfig or KUBECONFIG.default
  local c, err = kube_client.from_kubeconfig(fs.path(path), { timeout = 60 })
  if not c then error(("failed to load admin kubeconfig: %s"):format(tostring(err)), 0) end
  return c, path
end

local function create(flags, args)
  local bt = { description = flags.description, usages = flags.usages, groups = flags.groups, ttl = flags.ttl }
  if flags.config then
    local cfg, err = config.load { kind = "init", files = { flags.config }, flags = {} }
    if not cfg then error(err, 0) end
    local b = cfg.init and cfg.init.bootstrapTokens and cfg.init.bootstrapTokens[1] or {}
    for k, v in pairs(b) do if bt[k] == nil or k == "token" then bt[k] = v end end
  end
  if args[1] then bt.token = args[1] end
  if flags.ttl and not config.duration_seconds(flags.ttl) then
    error(("invalid argument %q for \"--ttl\" flag: time: invalid duration %q"):format(flags.ttl, flags.ttl), 0)
  end
  local t = tokens.normalize(bt)
  -- the join command needs the cluster CA's pin: a kubeconfig without a CA fails before a token exists
  local join_o
  if flags["print-join-command"] then
    local path = flags.kubeconfig or KUBECONFIG.default
    local kc, err = kube_kubeconfig.load(fs.path(path))
    if not kc then error(tostring(err), 0) end
    join_o = { endpoint = joincmd.endpoint(kc.server), token = t.token, hashes = joincmd.hashes(kc.ca_pem, path) }
  end
  if flags["dry-run"] then
    log.info("[dryrun] Would create Secret %s/bootstrap-token-%s", tokens.NS, t.id)
  else
    local c = client(flags)
    tokens.create_tokens({ dry_run = false }, c, { t }, true)
  end
  if join_o then
    local o = join_o
    if flags["certificate-key"] and flags["certificate-key"] ~= "" then
      o.control_plane, o.certificate_key = true, flags["certificate-key"]
    end
    log.result(joincmd.one_line(joincmd.text(o)))
  else
    log.result(t.token)
  end
  return 0
end

local function list_tokens(flags)
  local c = client(flags)
  -- pages of 10,000 (kubeadm asks for all at once): each page costs the apiserver a fixed ~13 ms
  -- here, and a token Secret is under 1 KiB, so a page stays far below the client's 64 MiB cap
  local got, err = c:list({ apiVersion = "v1", kind = "Secret", namespace = tokens.NS },
    { field_selector = "type=" .. tokens.TYPE, limit = 10000 })
  if not got then error("failed to list bootstrap tokens: " .. tostring(err), 0) end
  local out = {}
  for _, s in ipairs(got.items) do
    local t, terr = tokens.from_secret(s)
    if t then out[#out + 1] = t else log.warn("%s", terr) end
  end
  local o = flags.output or "text"
  if o == "text" or o == "" then
    if #out == 0 then return 0 end
    io.stdout:write(tokens.list_text(out, os.time()))
  elseif o == "json" or o == "yaml" then
    for _, t in ipairs(out) do
      local obj = { kind = "BootstrapToken", apiVersion = "output.kubeadm.k8s.io/v1alpha3",
        token = t.token, description = t.description, usages = t.usages, groups = t.groups,
        expires = t.expires and tokens.rfc3339(t.expires) or nil, creationTimestamp = nil }
      if o == "json" then io.stdout:write(kube_json.encode(obj), "\n")
      else io.stdout:write(moonadm_yaml.encode(obj)) end
    end
  else
    error(("unable to match a printer suitable for the output format %q, allowed formats are: json,text,yaml"):format(o), 0)
  end
  return 0
end

local function delete(flags, args)
  if #args == 0 then error("missing argument; 'token delete' is missing token of form \"[a-z0-9]{6}\" or \"[a-z0-9]{6}\\.[a-z0-9]{16}\"", 0) end
  -- every argument is checked before the kubeconfig is read or the API is called: a bad one
  -- deletes nothing (kubeadm's message; the value is not echoed: it may be a mistyped secret)
  local ids = {}
  for i, a in ipairs(args) do
    local id = a:match("^([a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9])$")
    if not id then id = tokens.parse(a) end
    if not id then
      error(("given token didn't match pattern %q or %q"):format("[a-z0-9]{6}", "[a-z0-9]{6}\\.[a-z0-9]{16}"), 0)
    end
    ids[i] = id
  end
  local c = client(flags)
  for _, id in ipairs(ids) do
    local name = "bootstrap-token-" .. id
    if flags["dry-run"] then
      log.info("[dryrun] Would delete Secret %s/%s", tokens.NS, name)
    else
      local ok, err = c:delete({ apiVersion = "v1", kind = "Secret", namespace = tokens.NS, name = name })
      if not ok then error(("failed to delete bootstrap token %q: %s"):format(id, tostring(err)), 0) end
    end
    log.result(("bootstrap token %q deleted"):format(id))
  end
  return 0
end

function M.main(argv)
  local sub = argv[1]
  local entry
  for _, s in ipairs(subs) do if s[1] == sub then entry = s end end
  if not entry then
    local spec = globals.flags(globals.global, { KUBECONFIG, DRY })
    local flags = flags_mod.parse(spec, argv)
    if sub and not sub:match("^%-") then error(("unknown command %q for \"moonadm token\""):format(sub), 0) end
    if flags then globals.setup(flags) end
    log.result(usage())
    return 0
  end
  local spec = globals.flags(globals.global, { KUBECONFIG, DRY }, entry[3])
  local flags, args = flags_mod.parse(spec, table.move(argv, 2, #argv, 1, {}))
  if not flags then error(args, 0) end
  globals.setup(flags)
  if sub == "generate" then
    log.result(tokens.generate())
    return 0
  elseif sub == "create" then
    if #args > 1 then error("accepts at most 1 arg(s), received " .. #args, 0) end
    return create(flags, args)
  elseif sub == "list" then
    return list_tokens(flags)
  else
    return delete(flags, args)
  end
end

return M
