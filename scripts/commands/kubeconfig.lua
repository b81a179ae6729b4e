-- `moonadm kubeconfig user`, kubeadm's `kubeconfig user`: a kubeconfig for an additional user on
-- stdout, with a client certificate signed by the cluster CA (CN = --client-name, O = --org) or
-- with --token, pointing at the control-plane endpoint of the configuration (--config, else the
-- defaults with the detected advertise address). Nothing is written to disk.
local common = require "commands.common"
local globals = require "framework.globals"
local config = require "config"
local C = require "config.constants"
local context = require "framework.context"
local flags_mod = require "framework.argv"
local log = require "framework.log"
local kubeconfig = require "pki.kubeconfigs"
local tree = require "pki.tree"
local pki = require "moonadm.pki"
local api = require "cluster.api"
local cli = require "framework.cli"

local M = {}

local fmt = string.format

M.USER_FLAGS = {
  { name = "client-name", type = "string", help = "The name of user. It will be used as the CN if client certificates are created" },
  { name = "config", type = "string", help = "Path to a kubeadm configuration file." },
  { name = "org", type = "list", help = "The organizations of the client certificate. It will be used as the O if client certificates are created" },
  { name = "token", type = "string", help = "The token that should be used as the authentication mechanism for this kubeconfig, instead of client certificates" },
  { name = "validity-period", type = "string", default = C.certificate_validity, help = "The validity period of the client certificate. It is an offset from the current time." },
}

M.help = {
  [""] = { short = "Kubeconfig file utilities", long = "Kubeconfig file utilities.", runnable = false, flags = {} },
  ["user"] = {
    short = "Output a kubeconfig file for an additional user",
    long = "Output a kubeconfig file for an additional user.",
    example = "  # Output a kubeconfig file for an additional user named foo\n" ..
      "  moonadm kubeconfig user --client-name=foo\n\n" ..
      "  # Output a kubeconfig file for an additional user named foo using a kubeadm config file bar\n" ..
      "  moonadm kubeconfig user --client-name=foo --config=bar",
    args = "", flags = M.USER_FLAGS,
  },
}

-- The kubeconfig text for opts {client_name, orgs, token, validity (seconds)} of a run context.
function M.user_kubeconfig(ctx, opts)
  local E = tree.env(ctx)
  E.leaf_validity = opts.validity
  local ca = kubeconfig.load_ca(E)
  local server = kubeconfig.server(E, { url = "cpe" })
  local t = { server = server, cluster = kubeconfig.cluster_name(E), user = opts.client_name, ca_pem = ca.pem }
  if opts.token and opts.token ~= "" then
    t.token = opts.token
  else
    if ca.state ~= "ok" then
      error(fmt("couldn't create a kubeconfig; the CA files couldn't be loaded: %s does not exist " ..
        "(a client certificate needs the CA key; use --token without it)", tree.path(E, "ca", "key")), 0)
    end
    local key = tree.take_key(E, "kubeconfig/user")
    local cert, err = pki.sign_cert(key, kubeconfig.client_spec(E, opts.client_name, opts.orgs or {}), ca.cert, ca.key)
    if not cert then error(fmt("failure while creating %s client certificate: %s", opts.client_name, err), 0) end
    t.cert_pem, t.key_pem = assert(cert:pem()), assert(key:pem())
  end
  return kubeconfig.encode(t)
end

local function user(argv)
  local flags, args = flags_mod.parse(globals.flags(globals.global, M.USER_FLAGS), argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  if #args > 0 then error(fmt("unknown command %q for %q", args[1], "moonadm kubeconfig user"), 0) end
  local name = flags["client-name"]
  if not name or name == "" then error('required flag(s) "client-name" not set', 0) end
  local vp = flags["validity-period"]
  local validity = config.duration_seconds(vp)
  if not validity then
    error(fmt('invalid argument %q for "--validity-period" flag: time: invalid duration %q', vp, vp), 0)
  end
  local default = config.duration_seconds(C.certificate_validity)
  if validity > default then
    local go = api.go_duration
    log.warn("the specified certificate validity period %s is longer than the default duration %s, this may " ..
      "increase security risks.", go(validity), C.certificate_validity)
  end
  local cfg, err = config.load { kind = "init", files = flags.config and { flags.config } or {}, flags = {},
    no_host_defaults = true }
  if not cfg then error(err, 0) end
  for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
  local ctx = context.new { command = "kubeconfig", cfg = cfg, gates = cfg.gates or {}, flags = flags, root = flags.root }
  -- It signs with the CA it reads: the tree is checked first. It writes nothing, so it takes no lock.
  common.take_root(flags, { cert_dir = (cfg.cluster or {}).certificatesDir, dry_run = true })
  local text = M.user_kubeconfig(ctx, { client_name = name, orgs = flags.org, token = flags.token,
    validity = math.floor(validity) })
  io.stdout:write(text, "\n") -- kubeadm: fmt.Fprintln of the serialized kubeconfig
  return 0
end

function M.main(argv)
  local sub = argv[1]
  if sub == "user" then return user(table.move(argv, 2, #argv, 1, {})) end
  local flags, args = flags_mod.parse(globals.global, argv)
  if flags and args[1] then
    error(fmt("unknown command %q for %q\nRun 'moonadm kubeconfig --help' for usage.", args[1], "moonadm kubeconfig"), 0)
  end
  io.stdout:write(cli.help_text { "kubeconfig" })
  return 0
end

return M
