-- etcd member operations with kubeadm's policy (util/etcd), over moonadm.etcd (the v3 JSON gateway).
--   local members = require "etcd.members"
--   m, err = members.new{endpoints={...}, cert_dir="/etc/kubernetes/pki" | ca_pem=, cert_pem=, key_pem=,
--                        client="healthcheck"|"apiserver", timeout=120, interval=0.5,
--                        dial_timeout=2, request_timeout=5}
--   list, err              = m:list()                      -- {{id=, id_hex=, name=, peer_urls=, client_urls=, is_learner=}}
--   list, err, kind        = m:list_local()                -- the first endpoint's own view, one try (no quorum needed)
--   cluster, member, how   = m:add_learner(peer_url, name, {client_url=})   -- how: "added" | "existing"
--   member, how            = m:promote(peer_url)           -- how: "promoted" | "already"
--   how, err, kind         = m:remove(peer_url)            -- how: "removed" | "not_found"; kind "last_member"
--   report, err            = m:wait_for_member(peer_url, {retries=8, interval=5})
--   ok, err, report        = m:check_health()
--   st, err, kind          = m:status()                    -- the first endpoint's (moonadm.etcd's status), one try
--   h, err, kind           = m:health()                    -- the first endpoint's /health (a read through the quorum), one try
--   snap, err, kind        = m:snapshot(path, {timeout=600})  -- the first endpoint's, one try (moonadm.etcd)
--   members.initial_cluster(cluster) -> "name=https://IP:2380,..."
-- Every operation: immediate first attempt, then every `interval` (500 ms, kubeadm's
-- EtcdAPICallRetryInterval) until `timeout` (Timeouts.etcdAPICall, default 2m); the last error is
-- returned. Errors are strings; the third value is a kind (moonadm.etcd's kinds, or "timeout",
-- "last_member", "not_found").
local etcd = require "moonadm.etcd"
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local duration = require "config.duration"
local log = require "framework.log"

local M = {
  RETRY_INTERVAL = 0.5,  -- constants.EtcdAPICallRetryInterval
  DEFAULT_TIMEOUT = 120, -- Timeouts.etcdAPICall
  WAIT_RETRIES = 8,      -- "This can take up to 40s": 8 x 5 s
  WAIT_INTERVAL = 5,
}

local Members = {}
Members.__index = Members

-- errors no retry can fix
local FATAL = { options = true, invalid_argument = true, tls = true, unauthenticated = true,
                permission_denied = true, last_member = true, no_member = true }

local function fmt_secs(s)
  if s >= 60 and s % 60 == 0 then return ("%dm0s"):format(s // 60) end
  return ("%gs"):format(s)
end

local function read_pem(path)
  local s, err = fs.read(path)
  if not s then return nil, "etcd: reading " .. path .. ": " .. tostring(err) end
  return s
end

function M.new(opts)
  assert(type(opts) == "table", "members.new: options table expected")
  local eps = opts.endpoints
  if type(eps) == "string" then eps = { eps } end
  if type(eps) ~= "table" or #eps == 0 then return nil, "etcd: no endpoints given", "options" end
  local o = { endpoints = eps, ca_pem = opts.ca_pem, ca_file = opts.ca_file, cert_pem = opts.cert_pem,
              key_pem = opts.key_pem, dial_timeout = opts.dial_timeout, timeout = opts.request_timeout,
              max_body = opts.max_body }
  if opts.cert_dir then
    local base = opts.client == "apiserver" and (opts.cert_dir .. "/apiserver-etcd-client")
      or (opts.cert_dir .. "/etcd/healthcheck-client")
    local err
    o.ca_pem, err = read_pem(opts.cert_dir .. "/etcd/ca.crt")
    if not o.ca_pem then return nil, err, "options" end
    o.cert_pem, err = read_pem(base .. ".crt")
    if not o.cert_pem then return nil, err, "options" end
    o.key_pem, err = read_pem(base .. ".key")
    if not o.key_pem then return nil, err, "options" end
  end
  local c, err, kind = etcd.new(o)
  if not c then return nil, err, kind end
  return setmetatable({
    c = c,
    timeout = opts.timeout or M.DEFAULT_TIMEOUT,
    interval = opts.interval or M.RETRY_INTERVAL,
    sleep = opts.sleep or core.sleep,
    clock = opts.clock or core.monotonic,
  }, Members)
end

function Members:close()
  if self.c then self.c:close() end
  self.c = nil
end
Members.__close = Members.close

-- The member list of an answer. The binding refuses an answer without members; this holds the
-- same line for any client (a test double, a future transport): a cluster always has a member,
-- so an empty or missing list is a protocol error, never "no members" a reset or join acts on.
local function members_of(r)
  if type(r) ~= "table" or type(r.members) ~= "table" or #r.members == 0 then
    return nil, ("etcd: %s: the answer has no members (a cluster always has one): not an etcd answer"):format(
      type(r) == "table" and tostring(r.endpoint) or "?"), "protocol"
  end
  return r.members
end
M.members_of = members_of

local function list_of(c)
  local r, err, kind = c:member_list()
  if not r then return nil, err, kind end
  return members_of(r)
end

function Members:endpoints() return self.c:endpoints() end
function Members:client() return self.c end

-- Runs attempt() until it returns a value, a fatal error, or the timeout; returns value or
-- nil, "WHAT: gave up after N attempts in Xs (timeout T): last error", "timeout".
function Members:retry(what, attempt, timeout)
  timeout = timeout or self.timeout
  local t0 = self.clock()
  local n = 0
  local lasterr, lastkind
  while true do
    n = n + 1
    local a, b, c = attempt(n)
    if a ~= nil then return a, b, c end
    lasterr, lastkind = b, c
    if FATAL[lastkind] then return nil, lasterr, lastkind end
    if self.clock() - t0 + self.interval > timeout then break end
    log.v(5, "[etcd] %s failed, retrying in %gs: %s", what, self.interval, tostring(lasterr))
    self.sleep(self.interval)
  end
  return nil, ("%s: gave up after %d attempts in %.1fs (timeout %s): %s"):format(
    what, n, self.clock() - t0, fmt_secs(timeout), tostring(lasterr)), "timeout", lastkind
end

local function has_url(m, url)
  for _, u in ipairs(m.peer_urls or {}) do
    if u == url then return true end
  end
  return false
end

function M.find(list, peer_url)
  for _, m in ipairs(list) do
    if has_url(m, peer_url) then return m end
  end
  return nil
end

function Members:list()
  return self:retry("etcd member list", function() return list_of(self.c) end)
end

-- The first endpoint's own view of the members, one try: not linearizable, so a member without a
-- quorum answers it (a linearizable list waits for a leader).
function Members:list_local()
  local r, err, kind = self.c:member_list(false)
  if not r then return nil, err, kind end
  return members_of(r)
end

-- kubeadm's name for a member in the initial-cluster list: its name, else (a learner that has not
-- started yet, e.g. concurrent joins) its hex ID.
local function cluster_entry(m, peer_url, name)
  local url = m.peer_urls[1] or ""
  if peer_url and has_url(m, peer_url) then return { name = name, peer_url = peer_url, id = m.id, is_learner = m.is_learner } end
  local n = m.name
  if n == nil or n == "" then n = m.id_hex or etcd.id_hex(m.id) end
  return { name = n, peer_url = url, id = m.id, is_learner = m.is_learner }
end

-- Adds the member with `peer_url` as a learner, once: a member already listed with that peer URL is
-- reused, and "Peer URLs already exists" (a concurrent or earlier add) lists again and continues.
-- Returns the cluster (list of {name=, peer_url=, id=, is_learner=} in etcd's order, ours named
-- `name`), our member, and how ("added" | "existing").
function Members:add_learner(peer_url, name, opts)
  assert(type(peer_url) == "string" and peer_url ~= "", "add_learner: peer URL expected")
  assert(type(name) == "string" and name ~= "", "add_learner: member name expected")
  opts = opts or {}
  local list, member, how = self:retry("etcd member add (learner) " .. peer_url, function()
    local ms, err, kind = list_of(self.c)
    if not ms then return nil, err, kind end
    local m = M.find(ms, peer_url)
    if m then return ms, m, "existing" end
    local a
    a, err, kind = self.c:member_add({ peer_url }, { learner = true })
    if a then
      local added
      added, err, kind = members_of(a)
      if not added then return nil, err, kind end
      if type(a.member) ~= "table" then return nil, "etcd: member add: the answer has no \"member\"", "protocol" end
      return added, a.member, "added"
    end
    if err:find("Peer URLs already exists", 1, true) or err:find("member ID already exist", 1, true) then
      ms, err, kind = list_of(self.c)
      if not ms then return nil, err, kind end
      m = M.find(ms, peer_url)
      if m then return ms, m, "existing" end
    end
    return nil, err, kind
  end)
  if not list then return nil, member, how end
  local cluster = {}
  for i, m in ipairs(list) do cluster[i] = cluster_entry(m, peer_url, name) end
  if how == "added" then
    log.info("[etcd] Announced new etcd member joining to the existing etcd cluster")
  else
    log.info("[etcd] The etcd member with peer URL %s is already in the cluster (ID %s): reusing it",
      peer_url, member.id_hex)
  end
  if opts.client_url then self.c:add_endpoint(opts.client_url) end
  return cluster, member, how
end

-- "name=peerURL,..." for every member, in order (kubeadm's --initial-cluster on join). Takes the
-- cluster of add_learner or raw members from list().
function M.initial_cluster(cluster)
  local parts = {}
  for _, m in ipairs(cluster) do
    local e = m.peer_url and m or cluster_entry(m)
    parts[#parts + 1] = e.name .. "=" .. e.peer_url
  end
  return table.concat(parts, ",")
end

local IN_SYNC = "can only promote a learner member which is in sync with leader"

-- Promotes the learner with `peer_url`: a member that is already a voter is a success ("already");
-- etcd refuses until the learner has caught up, so the promote is retried within the timeout.
function Members:promote(peer_url)
  local promoted = false
  return self:retry("etcd member promote " .. peer_url, function(n)
    local ms, err, kind = list_of(self.c)
    if not ms then return nil, err, kind end
    local m = M.find(ms, peer_url)
    if not m then return nil, "etcd: no member with peer URL " .. peer_url, "no_member" end
    if not m.is_learner then
      if promoted then return m, "promoted" end
      return m, "already"
    end
    local p
    p, err, kind = self.c:member_promote(m.id)
    if p then
      promoted = true
      m.is_learner = false
      log.info("[etcd] Promoted learner %s (%s) to a voting member%s", m.id_hex, peer_url,
        n > 1 and (" after %d attempts"):format(n) or "")
      return m, "promoted"
    end
    if err:find(IN_SYNC, 1, true) then
      log.v(5, "[etcd] learner %s is not in sync with the leader yet", m.id_hex)
    end
    return nil, err, kind
  end)
end

-- Removes the member with `peer_url`. Not a member (never added, or already removed) is a
-- success ("not_found"); the last member of a cluster is never removed.
function Members:remove(peer_url)
  return self:retry("etcd member remove " .. peer_url, function()
    local ms, err, kind = list_of(self.c)
    if not ms then return nil, err, kind end
    local m = M.find(ms, peer_url)
    if not m then return "not_found" end
    if #ms == 1 then
      return nil, ("etcd: refusing to remove member %s (%s): it is the last member of the cluster"):format(
        m.id_hex, peer_url), "last_member"
    end
    local ok
    ok, err, kind = self.c:member_remove(m.id)
    if ok then return "removed" end
    if err:find("member not found", 1, true) then return "not_found" end
    return nil, err, kind
  end)
end

-- Status of every endpoint. Returns the list of {endpoint=, status=|err=}.
function Members:statuses()
  local out = {}
  for i, ep in ipairs(self.c:endpoints()) do
    local st, err = self.c:status(i)
    out[#out + 1] = { endpoint = ep, status = st, err = err }
  end
  return out
end

-- kubeadm's WaitForClusterAvailable: `retries` x `interval`, each querying the status of every
-- endpoint; with `peer_url`, also until that member has started (it has published its name).
function Members:wait_for_member(peer_url, opts)
  opts = opts or {}
  local retries, interval = opts.retries or M.WAIT_RETRIES, opts.interval or M.WAIT_INTERVAL
  log.info("[etcd] Waiting for the new etcd member to join the cluster. This can take up to %s",
    fmt_secs(retries * interval))
  local last
  local t0 = self.clock()
  for i = 1, retries do
    local report, bad = self:statuses(), {}
    for _, r in ipairs(report) do
      if not r.status then bad[#bad + 1] = r.err end
    end
    if #bad == 0 and peer_url then
      local ms, err = list_of(self.c)
      local m = ms and M.find(ms, peer_url)
      if not ms then bad[#bad + 1] = err
      elseif not m then bad[#bad + 1] = "etcd: no member with peer URL " .. peer_url
      elseif m.name == "" then bad[#bad + 1] = ("etcd: member %s (%s) has not started yet"):format(m.id_hex, peer_url)
      end
    end
    if #bad == 0 then
      log.info("[etcd] The new etcd member joined the cluster after %s", duration.format_seconds(self.clock() - t0))
      return report
    end
    last = table.concat(bad, "; ")
    log.v(5, "[etcd] attempt %d/%d: %s", i, retries, last)
    if i < retries then self.sleep(interval) end
  end
  return nil, ("etcd: the cluster is not available after %d attempts every %s: %s"):format(
    retries, fmt_secs(interval), last), "timeout"
end

function Members:status()
  return self.c:status(1)
end

function Members:health()
  return self.c:health(1)
end

-- One try: a snapshot streams the whole database, and a failed one leaves nothing to retry from.
function Members:snapshot(path, opts)
  return self.c:snapshot_save(1, path, opts)
end

-- Health of every endpoint: GET /health plus the status (alarms, a leader). ok is true when every
-- endpoint is healthy; else nil, a message naming each unhealthy endpoint, and the report.
function Members:check_health()
  local report, bad = {}, {}
  for i, ep in ipairs(self.c:endpoints()) do
    local r = { endpoint = ep }
    local h, err = self.c:health(i)
    if not h then
      r.err = err
    else
      r.healthy, r.reason = h.healthy, h.reason
      if not h.healthy then r.err = ("etcd: %s is unhealthy: %s"):format(ep, h.reason ~= "" and h.reason or "no reason given") end
      local st, serr = self.c:status(i)
      r.status = st
      if not st then r.err = r.err or serr
      elseif #st.errors > 0 then r.err = r.err or ("etcd: %s reports: %s"):format(ep, table.concat(st.errors, "; "))
      elseif st.leader == "0" then r.err = r.err or ("etcd: %s has no leader"):format(ep)
      end
    end
    r.healthy = r.err == nil
    report[#report + 1] = r
    if r.err then bad[#bad + 1] = r.err end
  end
  if #bad > 0 then return nil, table.concat(bad, "; "), report end
  return true, nil, report
end

return M
