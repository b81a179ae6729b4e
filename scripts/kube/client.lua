-- The Kubernetes API client: paths from group/version/resource, status errors, retries, pagination,
-- patches, server-side apply, watch. The transport is moonadm.api (engine/http.c over libcurl).
--
--   local client = require "kube.client"
--   local c = assert(client.new{server=, ca_pem=, cert_pem=, key_pem=, token=, timeout=30})
--   local c = assert(client.from_kubeconfig("/etc/kubernetes/admin.conf"))
--   local ns, err = c:get{version="v1", resource="namespaces", name="default"}
--   -- err = {code=404, reason="NotFound", message=..., method=, path=} (tostring-able)
--   c:must_get(...) raises the same error instead (redis style).
--
-- A reference ("ref") names a resource: {group=, version=} or {apiVersion=}, {resource=} or {kind=},
-- namespace=, name=, subresource=. Objects carry their own: apiVersion, kind, metadata.namespace/name.
-- Nothing here logs a bearer token, a client key or Secret data: request/response bodies shown at
-- -v 8+ go through scrub() and log.redact.
local api = require "moonadm.api"
local core = require "moonadm.core"
local json = require "kube.json"
local kubeconfig = require "kube.kubeconfig"
local log = require "framework.log"
local results = require "framework.results"

local M = {}
M.json = json

local C = {}
C.__index = C

-- ---- errors ----------------------------------------------------------------

-- An error is a proxy over its fields, so reading one (err.code, tostring(err), raising it) is
-- seen: a failure a caller outside this file got back and never read is an unchecked result, and
-- M.unchecked() hands those over (the runner logs them at the end of each phase).
local FIELDS, SEEN = {}, {}
local Err = {}
local function describe(f)
  local where = f.method and (f.method .. " " .. (f.path or "")) or nil
  local s = f.message or "error"
  if where then s = where .. ": " .. s end
  if f.reason and f.code and f.code > 0 then s = ("%s (%s, %d)"):format(s, f.reason, f.code) end
  return s
end
Err.__index = function(e, k)
  rawset(e, SEEN, true)
  return rawget(e, FIELDS)[k]
end
Err.__newindex = function(e, k, v) rawget(e, FIELDS)[k] = v end
Err.__tostring = function(e)
  rawset(e, SEEN, true)
  return describe(rawget(e, FIELDS))
end
M.Error = Err

local function mkerr(t) return setmetatable({ [FIELDS] = t }, Err) end

-- Failures returned to callers outside this file, kept until read. At most MAX_PENDING unread
-- ones are kept with their call site (a long-running loop's failures must not grow without
-- bound: the ones read are dropped first); past that, the rest are only counted if never read
-- (a weak set: one collected unread is not counted, the kept ones already say what happened).
local MAX_PENDING = 64
local pending, overflow = {}, setmetatable({}, { __mode = "k" })
local THIS_FILE = debug.getinfo(1, "S").source

local function track(err)
  local info = debug.getinfo(3, "Sl")
  if not info or info.source == THIS_FILE then return end -- a call between this file's own methods
  rawset(err, SEEN, false)
  if #pending >= MAX_PENDING then
    local unread = {}
    for _, p in ipairs(pending) do if not rawget(p.err, SEEN) then unread[#unread + 1] = p end end
    pending = unread
  end
  for _, p in ipairs(pending) do if p.err == err then p.site = nil end end
  if #pending >= MAX_PENDING then overflow[err] = true return end
  local src = info.source:gsub("^[@=]", "")
  pending[#pending + 1] = { err = err, site = ("%s:%d"):format(src, info.currentline) }
end

-- A caller that deliberately retries or drops a failure says so (a poll loop's attempts).
function M.handled(err)
  if getmetatable(err) == Err then rawset(err, SEEN, true) end
  return err
end

-- The failures returned since the last call and never read: a list of {site = "file:line",
-- message = }, and how many more were not kept. Forgets them all.
function M.unchecked()
  local out = {}
  for _, p in ipairs(pending) do
    if p.site and not rawget(p.err, SEEN) then
      out[#out + 1] = { site = p.site, message = describe(rawget(p.err, FIELDS)) }
    end
  end
  local dropped = 0
  for e in pairs(overflow) do if not rawget(e, SEEN) then dropped = dropped + 1 end end
  pending, overflow = {}, setmetatable({}, { __mode = "k" })
  return out, dropped
end
results.register(M.unchecked)

local reasons = {
  [400] = "BadRequest", [401] = "Unauthorized", [403] = "Forbidden", [404] = "NotFound",
  [405] = "MethodNotAllowed", [406] = "NotAcceptable", [409] = "Conflict", [410] = "Expired",
  [415] = "UnsupportedMediaType", [422] = "Invalid", [429] = "TooManyRequests",
  [500] = "InternalError", [503] = "ServiceUnavailable", [504] = "Timeout",
}

local function status_error(resp, method, path)
  local st = json.decode(resp.body or "")
  if type(st) == "table" and st.kind == "Status" then
    return mkerr {
      code = math.tointeger(tonumber(st.code)) or resp.status, reason = st.reason ~= "" and st.reason or reasons[resp.status] or "Unknown",
      message = st.message or "", details = st.details, status = resp.status, method = method, path = path,
    }
  end
  local body = (resp.body or ""):sub(1, 200)
  return mkerr {
    code = resp.status, reason = reasons[resp.status] or "Unknown",
    message = core.redact(body ~= "" and body or ("HTTP " .. resp.status)), status = resp.status,
    method = method, path = path,
  }
end

-- ---- resource references -----------------------------------------------------

-- kind -> {resource, namespaced} for the kinds moonadm touches; others: lowercase plural, namespaced
-- unless ref.cluster_scoped (or ref.resource given).
local kinds = {
  Namespace = { "namespaces", false }, Node = { "nodes", false }, PersistentVolume = { "persistentvolumes", false },
  ClusterRole = { "clusterroles", false }, ClusterRoleBinding = { "clusterrolebindings", false },
  CertificateSigningRequest = { "certificatesigningrequests", false },
  CustomResourceDefinition = { "customresourcedefinitions", false },
  APIService = { "apiservices", false }, PriorityClass = { "priorityclasses", false },
  ValidatingWebhookConfiguration = { "validatingwebhookconfigurations", false },
  MutatingWebhookConfiguration = { "mutatingwebhookconfigurations", false },
  StorageClass = { "storageclasses", false },
  Endpoints = { "endpoints", true },
  SelfSubjectReview = { "selfsubjectreviews", false }, SelfSubjectAccessReview = { "selfsubjectaccessreviews", false },
  TokenReview = { "tokenreviews", false }, SubjectAccessReview = { "subjectaccessreviews", false },
}

function M.plural(kind)
  local k = kind:lower()
  if k:match("[^aeiou]y$") then return k:sub(1, -2) .. "ies" end
  if k:match("s$") or k:match("x$") or k:match("ch$") or k:match("sh$") then return k .. "es" end
  return k .. "s"
end

-- Returns {group=, version=, resource=, namespace=, name=, subresource=} or nil, err.
function M.resolve(ref)
  if type(ref) ~= "table" then return nil, "a resource reference must be a table" end
  local meta = type(ref.metadata) == "table" and ref.metadata or {}
  local group, version = ref.group, ref.version
  if not version and ref.apiVersion then
    group, version = ref.apiVersion:match("^([^/]+)/([^/]+)$")
    if not group then group, version = "", ref.apiVersion end
  end
  if not version then return nil, "a resource reference needs version (or apiVersion)" end
  if group == "core" then group = "" end
  local resource, namespaced = ref.resource, true
  if not resource then
    if not ref.kind then return nil, "a resource reference needs resource (or kind)" end
    local known = kinds[ref.kind]
    resource = known and known[1] or M.plural(ref.kind)
    namespaced = not known or known[2]
  end
  if ref.cluster_scoped then namespaced = false end
  local ns = ref.namespace or meta.namespace
  if ns == "" then ns = nil end
  if not namespaced then ns = nil end
  local name = ref.name or meta.name
  if name == "" then name = nil end
  return { group = group or "", version = version, resource = resource, namespace = ns, name = name,
           subresource = ref.subresource }
end

local function seg(s)
  if type(s) ~= "string" or s == "" or s:find("[/%%?#%s]") or s == "." or s == ".." then
    error(("invalid path segment %q"):format(tostring(s)), 3)
  end
  return s
end

-- Builds the API path; with_name=false leaves the name out (collections: list, create, watch).
function M.path(r, with_name)
  local p = (r.group == "" and "/api/" or ("/apis/" .. seg(r.group) .. "/")) .. seg(r.version)
  if r.namespace then p = p .. "/namespaces/" .. seg(r.namespace) end
  p = p .. "/" .. seg(r.resource)
  if with_name ~= false and r.name then
    p = p .. "/" .. seg(r.name)
    if r.subresource then p = p .. "/" .. seg(r.subresource) end
  end
  return p
end

-- ---- construction ------------------------------------------------------------

-- The cap on one response body (bytes) unless a call or the client says otherwise: a page of a
-- large list fits (the apiserver caps one object at etcd's 1.5 MiB request size; lists are paged).
-- Reads before trust (cluster-info) pass a much smaller one. A body over the cap fails the call
-- with reason "ResponseTooLarge" (never retried); a watch caps each event line at it. Within the
-- cap, what the answer holds is checked by its reader (kube/shape.lua: names at most 253 bytes).
M.MAX_BODY = 64 * 1024 * 1024

local defaults = {
  timeout = 30,          -- seconds: the budget for one call, retries included
  request_timeout = 30,  -- seconds: one attempt
  connect_timeout = 5,
  backoff = 0.1,         -- first retry delay (s), doubled each time, jittered
  max_backoff = 2,
  user_agent = "moonadm",
  max_body = M.MAX_BODY,
  no_retry = false,      -- one attempt per call: for a caller whose own loop is the retry
}

function M.new(opts)
  if type(opts) ~= "table" then error("kube.client.new: options table expected", 2) end
  local conn, err = api.new {
    server = opts.server, ca_pem = opts.ca_pem, ca_file = opts.ca_file, cert_pem = opts.cert_pem,
    key_pem = opts.key_pem, token = opts.token, insecure = opts.insecure,
    connect_timeout = opts.connect_timeout or defaults.connect_timeout,
    timeout = opts.request_timeout or defaults.request_timeout, user_agent = opts.user_agent or defaults.user_agent,
    max_body = opts.max_body or defaults.max_body,
  }
  if not conn then return nil, mkerr { code = 0, reason = "InvalidOptions", message = err } end
  local c = setmetatable({ conn = conn, server = conn:server(), namespace = opts.namespace }, C)
  for k, v in pairs(defaults) do c[k] = opts[k] or v end
  c.sleep = opts.sleep or core.sleep
  return c
end

function M.from_kubeconfig(path, o)
  local opts, err = kubeconfig.load(path, o)
  if not opts then return nil, mkerr { code = 0, reason = "InvalidKubeconfig", message = err } end
  for k, v in pairs(o or {}) do if k ~= "context" and k ~= "read" then opts[k] = v end end
  return M.new(opts)
end

function C:close() if self.conn then self.conn:close() end end
C.__close = C.close
C.__tostring = function(c) return "kube.client (" .. tostring(c.server) .. ")" end

-- ---- diagnostics (never secrets) -----------------------------------------------

-- A copy of a decoded body with Secret data and tokens masked. A Secret is an object of kind
-- Secret at any depth (a watch event's object, a list item, an SSA answer, ...), an item of a
-- SecretList (list items carry no kind), or a kind-less object with a string `type` and a
-- `data`/`stringData` (a Secret's shape: ConfigMaps have no `type`). Its data and stringData are
-- masked whatever their shape. Fields that hold a credential wherever they sit: SECRET_FIELDS.
-- One pass over the body, only when it is logged (-v 8 and up).
local SECRET_FIELDS = { token = true, password = true, ["client-key-data"] = true, ["token-secret"] = true,
                        certificateKey = true, ["certificate-key"] = true }

local function masked(x)
  if type(x) ~= "table" then return "<redacted>" end
  local m = {}
  for dk in pairs(x) do m[dk] = "<redacted>" end
  return setmetatable(m, getmetatable(x))
end

local scrub
local function is_secret(v, item_of_secrets)
  local kind = v.kind
  if kind == "Secret" then return true end
  if kind ~= nil then return false end
  return item_of_secrets or (type(v.type) == "string" and (v.data ~= nil or v.stringData ~= nil))
end

function scrub(v, depth, item_of_secrets)
  if type(v) ~= "table" then return v end
  if depth > 64 then return "<too deep>" end -- never an unscrubbed subtree
  local out = {}
  local secret = is_secret(v, item_of_secrets)
  local secret_items = v.kind == "SecretList"
  for k, x in pairs(v) do
    if secret and (k == "data" or k == "stringData") then
      out[k] = masked(x)
    elseif SECRET_FIELDS[k] and type(x) == "string" then
      out[k] = "<redacted>"
    elseif k == "items" and type(x) == "table" then
      local items = {}
      for i, it in pairs(x) do items[i] = scrub(it, depth + 2, secret_items) end
      out[k] = setmetatable(items, getmetatable(x))
    else
      out[k] = scrub(x, depth + 1)
    end
  end
  return setmetatable(out, getmetatable(v))
end
M.scrub = function(v) return scrub(v, 0) end

local function show_body(text)
  if not text or text == "" then return "" end
  local v = json.decode(text)
  if type(v) ~= "table" then return "<" .. #text .. " bytes>" end
  local ok, s = pcall(json.encode, scrub(v, 0))
  s = ok and s or "<unprintable>"
  if #s > 2000 then s = s:sub(1, 2000) .. "...(truncated)" end
  return s
end

-- ---- the request loop ------------------------------------------------------------

local function retryable_status(st) return st == 429 or (st >= 500 and st ~= 501) end

-- One API call with retries. o = {query=, body=(string), content_type=, accept=, timeout=,
-- on_data=, no_retry=}. Returns resp (any status) or nil, err (transport, after retries).
function C:raw(method, path, o)
  o = o or {}
  local budget = o.timeout or self.timeout
  local start = core.monotonic()
  local attempt, delay = 0, self.backoff
  local headers = { Accept = o.accept or "application/json" }
  if o.content_type then headers["Content-Type"] = o.content_type end
  if log.verbosity >= 8 and o.body then
    log.v(8, "Request body: %s", show_body(o.body))
  end
  while true do
    attempt = attempt + 1
    local remaining = budget - (core.monotonic() - start)
    local rt = o.request_timeout or self.request_timeout
    if not o.on_data and remaining > 0 and remaining < rt then rt = remaining end
    local got_data = false
    local on_data = o.on_data and function(chunk)
      got_data = true
      return o.on_data(chunk)
    end
    local resp, err, kind = self.conn:request {
      method = method, path = path, query = o.query, headers = headers, body = o.body,
      timeout = math.max(rt, 0.05), on_data = on_data, max_body = o.max_body,
    }
    local url = self.server .. path
    if log.verbosity >= 6 then
      log.v(6, "%s %s %s in %d milliseconds", method, url .. (o.query and next(o.query) and "?" .. api.query(o.query) or ""),
        resp and tostring(resp.status) or ("failed: " .. tostring(kind)), math.floor((core.monotonic() - start) * 1000))
    end
    local retry_after
    if resp then
      if not retryable_status(resp.status) or o.no_retry or self.no_retry or got_data then return resp end
      retry_after = tonumber(resp.headers["retry-after"])
      err = status_error(resp, method, path)
    else
      err = mkerr { code = 0, reason = kind == "timeout" and "Timeout" or kind == "connect" and "ConnectionError"
                    or kind == "tls" and "TLSError" or kind == "too_large" and "ResponseTooLarge" or "TransportError",
                    message = err, kind = kind,
                    method = method, path = path }
      if o.no_retry or self.no_retry or got_data or not (kind == "connect" or kind == "timeout") then return nil, err end
    end
    local elapsed = core.monotonic() - start
    local wait = math.min(delay, self.max_backoff) * (0.5 + math.random() * 0.5)
    if retry_after then wait = math.max(wait, math.min(retry_after, self.max_backoff * 4)) end
    if elapsed + wait > budget then wait = budget - elapsed end -- one last attempt at the deadline
    if wait <= 0.005 then
      local last = tostring(err.message)
      err.message = ("gave up after %d attempt%s in %.1fs (timeout %gs): %s"):format(attempt,
        attempt == 1 and "" or "s", elapsed, budget, last)
      err.attempts = attempt
      return nil, err
    end
    log.v(2, "%s %s: %s; retrying in %.2fs (attempt %d)", method, url, tostring(err.message), wait, attempt)
    self.sleep(wait)
    delay = delay * 2
  end
end

-- A call that decodes the answer: returns the decoded object (or true for an empty 2xx body) or
-- nil, err (status errors decoded). o.drop: member names left out of the answer (kube/json.lua).
function C:call(method, ref_or_path, o)
  o = o or {}
  local path = ref_or_path
  if type(path) == "table" then
    local r, err = M.resolve(ref_or_path)
    if not r then error("kube.client: " .. err, 3) end
    path = M.path(r, o.with_name)
  end
  local resp, err = self:raw(method, path, o)
  if not resp then return nil, err end
  if resp.status < 200 or resp.status >= 300 then return nil, status_error(resp, method, path) end
  if log.verbosity >= 9 then log.v(9, "Response body: %s", show_body(resp.body)) end
  if resp.body == "" then
    if method == "DELETE" then return true end
    -- the API answers every other verb with the object (or a list): an empty 2xx is no result
    return nil, mkerr { code = resp.status, reason = "BadResponse", message = "an empty answer (HTTP " .. resp.status .. ")",
      method = method, path = path }
  end
  local v, derr = json.decode(resp.body, o.drop and { drop = o.drop })
  if v == nil then
    return nil, mkerr { code = resp.status, reason = "BadResponse", message = derr, method = method, path = path }
  end
  if type(v) ~= "table" then
    return nil, mkerr { code = resp.status, reason = "BadResponse", method = method, path = path,
      message = ("the answer is a JSON %s, not an object"):format(v == json.null and "null" or type(v)) }
  end
  return v, nil, resp
end

local function query_of(o)
  local q = {}
  if o.dry_run then q.dryRun = "All" end
  if o.field_manager then q.fieldManager = o.field_manager end
  if o.force ~= nil then q.force = o.force end
  if o.label_selector then q.labelSelector = o.label_selector end
  if o.field_selector then q.fieldSelector = o.field_selector end
  if o.resource_version then q.resourceVersion = o.resource_version end
  for k, v in pairs(o.query or {}) do q[k] = v end
  return q
end

local function body_of(obj)
  local ok, s = pcall(json.encode, obj)
  if not ok then error("kube.client: cannot encode the object: " .. tostring(s), 3) end
  return s
end

-- ---- verbs ---------------------------------------------------------------------

function C:get(ref, o)
  o = o or {}
  return self:call("GET", ref, { query = query_of(o), timeout = o.timeout, max_body = o.max_body })
end

-- A decoded JSON array: `[]` (json.array_mt) or a sequence 1..n (an object `{}` is not one).
local MANAGED_FIELDS = { "managedFields" }

local function is_array(t)
  if type(t) ~= "table" then return false end
  if getmetatable(t) == json.array_mt then return true end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n > 0 and n == #t
end

-- Lists every page (limit per page, default 500) unless o.all == false. Returns the List object
-- with all items, metadata.resourceVersion of the last page, and .pages = number of pages. The
-- items come without metadata.managedFields (nothing here reads them; o.managed_fields keeps them).
function C:list(ref, o)
  o = o or {}
  local r, rerr = M.resolve(ref)
  if not r then error("kube.client: " .. rerr, 2) end
  r.name = nil
  local path = M.path(r)
  local q = query_of(o)
  q.limit = o.limit or 500
  if o.continue then q.continue = o.continue end
  local items, first, pages = json.array {}, nil, 0
  while true do
    local page, err = self:call("GET", path, { query = q, timeout = o.timeout, max_body = o.max_body,
      drop = not o.managed_fields and MANAGED_FIELDS or nil })
    if not page then return nil, err end
    if type(page) ~= "table" or not is_array(page.items) then -- an answer of another shape is no empty list
      return nil, mkerr { code = 0, reason = "BadResponse", method = "GET", path = path,
        message = ("the answer to a list is not a list: %s"):format(type(page) ~= "table" and "an empty body"
          or page.items == nil and "it has no \"items\"" or "\"items\" is not an array") }
    end
    pages = pages + 1
    first = first or page
    for _, it in ipairs(page.items) do items[#items + 1] = it end
    local cont = type(page.metadata) == "table" and page.metadata.continue or nil
    first.metadata = page.metadata
    if o.all == false or not cont or cont == "" or cont == json.null then break end
    q.continue = cont
    q.resourceVersion = nil
  end
  first.items, first.pages = items, pages
  return first
end

function C:create(obj, o)
  o = o or {}
  local ref = o.ref or obj
  return self:call("POST", ref, { with_name = (o.ref and o.ref.subresource ~= nil) or false, query = query_of(o),
    body = body_of(obj), content_type = "application/json", timeout = o.timeout })
end

function C:update(obj, o)
  o = o or {}
  local ref = o.ref or obj
  return self:call("PUT", ref, { query = query_of(o), body = body_of(obj), content_type = "application/json",
    timeout = o.timeout })
end

local patch_types = {
  merge = "application/merge-patch+json", strategic = "application/strategic-merge-patch+json",
  json = "application/json-patch+json", apply = "application/apply-patch+yaml",
}

-- patch: a table (encoded here) or a JSON string; o.type = "strategic" (default) | "merge" | "json" |
-- "apply" (needs o.field_manager; o.force to take over conflicting fields).
function C:patch(ref, patch, o)
  o = o or {}
  local ptype = o.type or "strategic"
  local ct = patch_types[ptype]
  if not ct then error("kube.client: unknown patch type " .. tostring(ptype), 2) end
  if ptype == "apply" and not o.field_manager then error("kube.client: server-side apply needs field_manager", 2) end
  if ptype == "json" and type(patch) == "table" then setmetatable(patch, json.array_mt) end
  local body = type(patch) == "string" and patch or body_of(patch)
  return self:call("PATCH", ref, { query = query_of(o), body = body, content_type = ct, timeout = o.timeout })
end

-- Server-side apply of a whole object: o.field_manager (default "moonadm"), o.force.
function C:apply(obj, o)
  o = o or {}
  local p = {}
  for k, v in pairs(o) do p[k] = v end
  p.type, p.field_manager = "apply", o.field_manager or "moonadm"
  return self:patch(obj, obj, p)
end

-- o.propagation_policy ("Foreground"|"Background"|"Orphan"), o.grace_period, o.dry_run,
-- o.ignore_not_found (a 404 then returns true).
function C:delete(ref, o)
  o = o or {}
  local body
  if o.propagation_policy or o.grace_period then
    body = body_of { apiVersion = "v1", kind = "DeleteOptions", propagationPolicy = o.propagation_policy,
      gracePeriodSeconds = o.grace_period }
  end
  local v, err = self:call("DELETE", ref, { query = query_of(o), body = body,
    content_type = body and "application/json" or nil, timeout = o.timeout })
  if not v and o.ignore_not_found and err.code == 404 then return true end
  return v, err
end

-- Creates obj, or on 409 AlreadyExists replaces the live object with it (keeping the live
-- resourceVersion; a 409 Conflict from a concurrent writer is retried). Returns obj, "created"|"updated".
-- o.mutate(live, obj) may adjust obj from the live object before the update.
function C:create_or_update(obj, o)
  o = o or {}
  local got, err = self:create(obj, o)
  if got then return got, "created" end
  if err.code ~= 409 then return nil, err end
  local deadline = core.monotonic() + (o.timeout or self.timeout)
  while true do
    local live, gerr = self:get(obj, o)
    if not live then
      if gerr.code ~= 404 then return nil, gerr end
      got, err = self:create(obj, o) -- deleted meanwhile
      if got then return got, "created" end
    elseif type(live.metadata) ~= "table" or live.metadata.resourceVersion == nil then
      return nil, mkerr { code = 0, reason = "BadResponse", method = "GET", path = M.path(assert(M.resolve(obj))),
        message = "the live object has no metadata.resourceVersion" }
    else
      local upd = {}
      for k, v in pairs(obj) do upd[k] = v end
      upd.metadata = {}
      for k, v in pairs(obj.metadata or {}) do upd.metadata[k] = v end
      upd.metadata.resourceVersion = live.metadata.resourceVersion
      if o.mutate then o.mutate(live, upd) end
      got, err = self:update(upd, o)
      if got then return got, "updated" end
    end
    if err.code ~= 409 or core.monotonic() > deadline then return nil, err end
  end
end

-- Returns the live object, or creates obj when it does not exist (a 409 from a racing creator
-- reads it again). Returns obj, "existing"|"created".
function C:get_or_create(obj, o)
  o = o or {}
  local live, err = self:get(obj, o)
  if live then return live, "existing" end
  if err.code ~= 404 then return nil, err end
  local got, cerr = self:create(obj, o)
  if got then return got, "created" end
  if cerr.code ~= 409 then return nil, cerr end
  live, err = self:get(obj, o)
  if live then return live, "existing" end
  return nil, err
end

-- Feeds a response's chunks to on_line one complete line at a time; a line longer than max bytes
-- stops the reading (too_large() is returned). Returns fn(chunk) -> false to stop.
local function line_reader(max, on_line, too_large)
  local pend, pend_len = {}, 0 -- the pieces of the line being received (no quadratic concatenation)
  return function(chunk)
    local start = 1
    while true do
      local nl = chunk:find("\n", start, true)
      if not nl then
        if start <= #chunk then
          pend[#pend + 1] = chunk:sub(start)
          pend_len = pend_len + #chunk - start + 1
        end
        if pend_len > max then return too_large() end
        return true
      end
      local line = chunk:sub(start, nl - 1)
      if #pend > 0 then
        pend[#pend + 1] = line
        line = table.concat(pend)
        pend, pend_len = {}, 0
      end
      start = nl + 1
      if #line > max then return too_large() end
      if not on_line(line) then return false end
    end
  end
end

-- One line of a watch: the event, or nil and the error (an ERROR event, or not an event).
local function watch_event(line, path)
  local ev, derr = json.decode(line)
  if type(ev) ~= "table" then
    return nil, mkerr { code = 0, reason = "BadResponse", message = "watch: " .. tostring(derr), method = "GET", path = path }
  end
  if ev.type == "ERROR" then
    local st = type(ev.object) == "table" and ev.object or {}
    return nil, mkerr { code = math.tointeger(tonumber(st.code)) or 500, reason = st.reason or "Unknown",
      message = st.message or "", method = "GET", path = path }
  end
  if type(ev.object) ~= "table" or type(ev.type) ~= "string" then
    return nil, mkerr { code = 0, reason = "BadResponse", method = "GET", path = path,
      message = "watch: an event without a type or an object" }
  end
  return ev
end

-- The watch's path and query: a named object becomes a field selector, as kubectl does.
local function watch_request(ref, o, timeout)
  local r, rerr = M.resolve(ref)
  if not r then error("kube.client: " .. rerr, 3) end
  local q = query_of(o)
  if r.name then
    q.fieldSelector = "metadata.name=" .. r.name .. (q.fieldSelector and ("," .. q.fieldSelector) or "")
    r.name = nil
  end
  q.watch = "true"
  q.timeoutSeconds = math.max(1, math.ceil(timeout))
  if o.bookmarks then q.allowWatchBookmarks = "true" end
  return M.path(r), q
end

-- Watches a collection (ref.name narrows it with a field selector). handler(event) gets
-- {type="ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK", object=}; returning false stops the watch.
-- o = {resource_version=, timeout= (s, default 60; the server ends the watch then),
--      label_selector=, field_selector=, bookmarks=}.
-- Returns last_rv, "stopped"|"timeout" — pass last_rv as resource_version to resume — or nil, err
-- (a 410 Expired means: list again, then watch from the list's resourceVersion).
function C:watch(ref, handler, o)
  o = o or {}
  if type(handler) ~= "function" then error("kube.client.watch: handler function expected", 2) end
  local timeout = o.timeout or 60
  local path, q = watch_request(ref, o, timeout)
  local max_line = o.max_body or self.max_body or M.MAX_BODY
  local last_rv, stopped, werr = o.resource_version, false, nil
  local function too_large()
    werr = mkerr { code = 0, reason = "ResponseTooLarge", method = "GET", path = path,
      message = ("watch %s%s: an event is larger than the limit of %d bytes: stopped reading"):format(
        self.server, path, max_line) }
    return false
  end
  local function on_line(line)
    if not line:find("%S") then return true end
    local ev, eerr = watch_event(line, path)
    if not ev then werr = eerr return false end
    local rv = type(ev.object.metadata) == "table" and ev.object.metadata.resourceVersion
    if rv then last_rv = rv end
    if (ev.type ~= "BOOKMARK" or o.bookmarks) and handler(ev) == false then
      stopped = true
      return false
    end
    return true
  end
  local resp, err = self:raw("GET", path, { query = q, on_data = line_reader(max_line, on_line, too_large),
    request_timeout = timeout + 15, timeout = o.connect_budget or self.timeout })
  if werr then return nil, werr end
  if stopped then return last_rv, "stopped" end
  if not resp then
    if err.reason == "Timeout" then return last_rv, "timeout" end
    return nil, err
  end
  if resp.status < 200 or resp.status >= 300 then return nil, status_error(resp, "GET", path) end
  return last_rv, "timeout"
end

-- ---- results: every failure tracked; the raising variant c:must_get(...) etc. (redis style) ----

for _, name in ipairs { "raw", "get", "list", "create", "update", "patch", "apply", "delete", "create_or_update",
                        "get_or_create", "watch", "call" } do
  local f = C[name]
  C[name] = function(self, ...)
    local a, err, c = f(self, ...)
    if a == nil and getmetatable(err) == Err then track(err) end
    return a, err, c
  end
  C["must_" .. name] = function(self, ...)
    local a, err, c = f(self, ...)
    if a == nil then
      if getmetatable(err) == Err then rawset(err, SEEN, true) end
      error(err, 2)
    end
    return a, err, c
  end
end

M.Client = C
return M
