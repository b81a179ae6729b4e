-- show-join-command: init's closing text with the worker (and, with a controlPlaneEndpoint, the
-- control-plane) join command. The token is this run's first bootstrap token; when bootstrap-token
-- did not run in this process (--resume, or `init phase show-join-command` with a generated token)
-- the longest-lived authentication token of the default group is read back from the cluster.
local log = require "framework.log"
local capi = require "cluster.api"
local cadmin = require "cluster.admin"
local tokens = require "cluster.tokens"
local joincmd = require "cluster.join_command"

local M = {}

-- The best token to print from the cluster's token Secrets (nil if none).
function M.pick(list, now)
  local best
  for _, t in ipairs(list) do
    local auth, grp = false, false
    for _, u in ipairs(t.usages) do if u == "authentication" then auth = true end end
    for _, g in ipairs(t.groups) do if g == tokens.DEFAULT_GROUP then grp = true end end
    if auth and grp and (not t.expires or t.expires > now) then
      if not best or (best.expires and (not t.expires or t.expires > best.expires)) then best = t end
    end
  end
  return best
end

function M.cluster_tokens(c)
  local list, err = c:list({ apiVersion = "v1", kind = "Secret", namespace = tokens.NS },
    { field_selector = "type=" .. tokens.TYPE })
  if not list then error("listing bootstrap tokens: " .. tostring(err), 0) end
  local out = {}
  for _, s in ipairs(list.items) do
    local t = tokens.from_secret(s)
    if t then out[#out + 1] = t end
  end
  return out
end

function M.token(ctx)
  local bt = (ctx.cfg.init or {}).bootstrapTokens or {}
  if ctx.data.tokens and ctx.data.tokens[1] then return ctx.data.tokens[1].token end
  if bt[1] and bt[1].token and bt[1].token ~= "" then return bt[1].token end
  if ctx.dry_run then return "<token>" end
  local t = M.pick(M.cluster_tokens(cadmin.client(ctx)), os.time())
  if not t then error("no bootstrap token to show: create one with `moonadm token create`", 0) end
  return t.token
end

function M.run(ctx)
  local kc = capi.admin_kubeconfig(ctx)
  local skip_token = ctx.flags and ctx.flags["skip-token-print"]
  local token = skip_token and "<value withheld>" or M.token(ctx)
  local key
  local upload = ctx.flags and ctx.flags["upload-certs"]
  if upload then
    key = ctx.data.certificate_key or (ctx.flags and ctx.flags["certificate-key"]) or (ctx.cfg.init or {}).certificateKey
    if ctx.flags["skip-certificate-key-print"] or not key or key == "" then key = "<value withheld>" end
  end
  local o = { endpoint = joincmd.endpoint(kc.server), token = token, hashes = joincmd.hashes(kc.ca_pem, capi.ADMIN_CONF) }
  local worker = joincmd.text(o)
  o.control_plane, o.certificate_key = true, key
  local cp = joincmd.text(o)
  local cpe = ctx.cfg.cluster.controlPlaneEndpoint
  log.result(joincmd.init_done { kubeconfig = capi.ADMIN_CONF, cpe = cpe and cpe ~= "", upload_certs = upload,
    worker = worker, control_plane = cp })
end

return M
