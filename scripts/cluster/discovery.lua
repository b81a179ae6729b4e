-- Join discovery: how a joining node comes to trust the cluster (reference kubeadm-pki.md §4).
-- Token discovery fetches kube-public/cluster-info anonymously, waits for the bootstrap signer's
-- JWS for the token id and verifies it with the token secret, checks the CA against the pinned
-- public-key hashes (any of several), then fetches the ConfigMap again over TLS verified by that CA
-- and requires identical content. File discovery reads a kubeconfig (a path or an HTTPS URL),
-- including any client credentials embedded in it. Each failure has its own message.
local client_mod = require "kube.client"
local core = require "moonadm.core"
local duration = require "config.duration"
local kubeconfig = require "kube.kubeconfig"
local log = require "framework.log"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"
local config_mod = require "config"

local M = {}

local CLUSTER_INFO <const> = { apiVersion = "v1", kind = "ConfigMap", namespace = "kube-public", name = "cluster-info" }

-- The cap on what discovery reads before (and while) it trusts the cluster: the cluster-info
-- ConfigMap (a kubeconfig with one CA bundle and a few JWS signatures: a few KiB) and a discovery
-- file fetched over HTTPS. Anyone between the nodes can answer the first, anonymous fetch.
M.MAX_BODY = 1024 * 1024

local function fail(fmt, ...) error(("[discovery] " .. fmt):format(...), 0) end

-- The signed kubeconfig of a cluster-info answer and its JWS for jws_key, when the answer is a
-- ConfigMap of that shape (nil otherwise: not signed yet, or not a cluster-info at all).
function M.signed_content(cm, jws_key)
  local data = type(cm) == "table" and cm.data
  if type(data) ~= "table" then return nil end
  local content, jws = data.kubeconfig, data[jws_key]
  if type(content) ~= "string" or type(jws) ~= "string" then return nil end
  return content, jws
end

-- The single cluster of a cluster-info kubeconfig: server, CA PEM.
function M.cluster_of(text, src)
  local docs, err = yaml.decode(text, src)
  if not docs then fail("%s holds no valid kubeconfig: %s", src, err) end
  -- any level may be another type (yaml.null, a string, a list): a bad document, not a crash
  local function map(v) return type(v) == "table" and v or nil end
  local doc = map(docs[1])
  local clusters = doc and map(doc.clusters)
  local c = clusters and map(clusters[1]) and map(clusters[1].cluster)
  if not c or type(c.server) ~= "string" then fail("%s holds no cluster with a server", src) end
  local cad = c["certificate-authority-data"]
  local ca = type(cad) == "string" and encoding.base64_decode(cad)
  if not ca then fail("%s: the cluster has no certificate-authority-data", src) end
  return c.server, ca
end

-- Does the CA bundle carry a certificate whose public key has one of the pins?
function M.pinned(ca_pem, hashes)
  local certs = pki.read_certs(ca_pem) or {}
  local seen = {}
  for _, cert in ipairs(certs) do
    local pin = cert:pin()
    seen[#seen + 1] = pin
    for _, h in ipairs(hashes) do
      if h:lower() == pin then return true end
    end
  end
  return false, seen
end

local function get_cluster_info(c)
  local cm, err = c:get(CLUSTER_INFO)
  if not cm then return nil, err end
  return cm
end

function M.token(ctx, d, timeout)
  local bt = d.bootstrapToken or {}
  local token = bt.token
  local id, secret = (token or ""):match("^([a-z0-9]+)%.([a-z0-9]+)$")
  if not id then fail("the discovery token is missing or malformed: expected [a-z0-9]{6}.[a-z0-9]{16}") end
  local endpoint = bt.apiServerEndpoint
  if not endpoint or endpoint == "" then fail("no API server endpoint to discover from: pass it as the argument of `moonadm join`") end
  local hashes = bt.caCertHashes or {}
  if #hashes == 0 and not bt.unsafeSkipCAVerification then
    fail("using token-based discovery without --discovery-token-ca-cert-hash can be unsafe; pass the hash " ..
      "printed by `moonadm init` or `moonadm token create --print-join-command`, or --discovery-token-unsafe-skip-ca-verification")
  end
  local server = "https://" .. endpoint
  log.info("[discovery] Trying to connect to API Server %q", endpoint)
  -- The first fetch is anonymous and unverified (kubeadm's one exception, SECURITY.md): its content
  -- is trusted only after the JWS and the CA pin check below.
  local insecure = assert(client_mod.new { server = server, insecure = true, timeout = 5, request_timeout = 5,
    max_body = M.MAX_BODY })
  local deadline = core.monotonic() + timeout
  local cm, last, content, jws
  local jws_key = "jws-kubeconfig-" .. id
  log.info("[discovery] Created cluster-info discovery client, requesting info from %q", server)
  local t0, waiting = core.monotonic(), false
  while true do
    cm, last = get_cluster_info(insecure)
    content, jws = M.signed_content(cm, jws_key)
    if content then break end
    if last and last.reason == "ResponseTooLarge" then -- no server of ours sends that: do not wait for more
      insecure:close()
      fail("refusing the cluster-info answer of %s: %s", server, tostring(last))
    end
    if not waiting then
      -- the API server is not up yet, or the bootstrap signer has not signed this token yet
      waiting = true
      log.info("[discovery] Waiting for the cluster-info ConfigMap signed for token %q at %s. This can take up to %s",
        id, server, duration.format_seconds(timeout))
    end
    if core.monotonic() > deadline then
      insecure:close()
      if cm then
        fail("there is no JWS signed token in the cluster-info ConfigMap. This token id %q is invalid for this cluster or it has expired. Use \"moonadm token create\" on the control-plane node to create a new valid token", id)
      end
      fail("failed to request the cluster-info ConfigMap from %s within %ds: %s", server, math.floor(timeout), tostring(last))
    end
    core.sleep(1)
  end
  insecure:close()
  if waiting then log.info("[discovery] The cluster-info ConfigMap was ready after %s", duration.format_seconds(core.monotonic() - t0)) end
  local ok = pki.jws_verify(content, id, secret, jws)
  if not ok then
    fail("failed to verify JWS signature of received cluster info object, can't trust this API Server")
  end
  local cluster_server, ca = M.cluster_of(content, "cluster-info")
  if bt.unsafeSkipCAVerification and #hashes == 0 then
    log.warn("[discovery] the cluster CA is NOT verified (--discovery-token-unsafe-skip-ca-verification): " ..
      "anyone who can answer for %s with this token's signature is trusted", endpoint)
  else
    local pinned, seen = M.pinned(ca, hashes)
    if not pinned then
      fail("cluster CA found in cluster-info ConfigMap is invalid: none of the public keys %q are pinned",
        table.concat(seen, ", "))
    end
  end
  log.info("[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server %q", endpoint)
  -- Fetch again, this time verifying the server with the CA we now trust.
  local secure = assert(client_mod.new { server = server, ca_pem = ca, timeout = 10, request_timeout = 5,
    max_body = M.MAX_BODY })
  local again, err = get_cluster_info(secure)
  secure:close()
  if not again then fail("failed to securely fetch the cluster-info ConfigMap from %s: %s", server, tostring(err)) end
  if type(again.data) ~= "table" or again.data.kubeconfig ~= content then
    fail("the cluster-info ConfigMap changed between the insecure and the secure fetch: refusing to trust it")
  end
  log.info("[discovery] Successfully established connection with API Server %q", endpoint)
  return { server = cluster_server, ca_pem = ca, token = d.tlsBootstrapToken or token }
end

local function read_location(loc)
  if loc:match("^https://") then
    local host, path = loc:match("^(https://[^/]+)(/?.*)$")
    local c = assert(client_mod.new { server = host, timeout = 10, request_timeout = 10, max_body = M.MAX_BODY })
    local resp, err = c:raw("GET", path ~= "" and path or "/")
    c:close()
    if not resp or resp.status ~= 200 then fail("cannot fetch the discovery file %s: %s", loc, tostring(err or resp.status)) end
    return resp.body
  end
  local f, err = io.open(loc, "r")
  if not f then fail("cannot read the discovery file: %s", err) end
  local text = f:read("a")
  f:close()
  return text
end

function M.file(ctx, d)
  local loc = d.file.kubeConfigPath
  log.info("[discovery] Using the kubeconfig file %s for discovery", loc)
  local text = read_location(loc)
  local opts, err = kubeconfig.parse(text, { filename = loc })
  if not opts then fail("%s", err) end
  if not opts.ca_pem then fail("%s: the cluster has no certificate-authority-data to trust", loc) end
  local r = { server = opts.server, ca_pem = opts.ca_pem, token = opts.token or d.tlsBootstrapToken,
    cert_pem = opts.cert_pem, key_pem = opts.key_pem }
  if not r.token and not r.cert_pem then
    fail("%s carries no client credentials and no tlsBootstrapToken is set: pass --tls-bootstrap-token", loc)
  end
  return r
end

-- Runs the configured discovery. Returns {server, ca_pem, token | cert_pem+key_pem}.
function M.run(ctx)
  local join = ctx.cfg.join or {}
  local d = join.discovery or {}
  local timeout = config_mod.duration_seconds((join.timeouts or {}).discovery or "5m0s") or 300
  if d.file and d.file.kubeConfigPath then return M.file(ctx, d) end
  return M.token(ctx, d, timeout)
end

-- The TLS bootstrap kubeconfig (what kubeadm writes as bootstrap-kubelet.conf), from a discovery result.
function M.bootstrap_kubeconfig(r, cluster_name, server)
  cluster_name = cluster_name or "kubernetes"
  local user = "tls-bootstrap-token-user"
  local cred = r.cert_pem and { ["client-certificate-data"] = encoding.base64_encode(r.cert_pem),
    ["client-key-data"] = encoding.base64_encode(r.key_pem) } or { token = r.token }
  return {
    apiVersion = "v1", kind = "Config",
    clusters = { { name = cluster_name, cluster = { server = server or r.server,
      ["certificate-authority-data"] = encoding.base64_encode(r.ca_pem) } } },
    contexts = { { name = user .. "@" .. cluster_name, context = { cluster = cluster_name, user = user } } },
    ["current-context"] = user .. "@" .. cluster_name,
    users = { { name = user, user = cred } },
  }
end

return M
