-- What `certs rotate-ca` does, stage by stage (docs/rotate-ca.md). Every control plane moves
-- through trust-both (its CA files are bundles, the old CA first: it still signs), issued (the new CA
-- signs: its key, the bundle new first, every leaf of the CA reissued) and trust-new (the new CA
-- alone); a node takes a stage once every control plane has taken the one before, so a client
-- always meets an API server that trusts whoever signed its certificate. finish, once all are at
-- trust-new, drops the old CA from what the API servers published and ends the rotation.
-- Each stage is computed from the rotation's state (scripts/rotation/state.lua), never from the
-- node's files, so a run killed anywhere converges when run again.
local pki = require "moonadm.pki"
local log = require "framework.log"
local capi = require "cluster.api"
local cadmin = require "cluster.admin"
local cnode = require "cluster.node"
local certs_upload = require "cluster.certs_upload"
local certlist = require "pki.certlist"
local tree = require "pki.tree"
local shape = require "kube.shape"
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local config = require "config"
local members = require "etcd.members"
local restart = require "renewal.restart"
local cas = require "rotation.cas"
local state = require "rotation.state"

local M = {}

M.PREFIX = "[rotate-ca]"
M.PUBLISHED = { apiVersion = "v1", kind = "ConfigMap", namespace = "kube-system", name = "extension-apiserver-authentication" }
-- How long finish waits for no API server to publish the old CA again once it is dropped: each one
-- syncs that ConfigMap on every change to it (and each minute), so a few seconds say every one has.
M.SETTLE = 5
M.PUBLISH_TIMEOUT = 120

local MODE_CRT <const>, MODE_KEY <const> = tonumber("644", 8), tonumber("600", 8)
local wait_published -- defined with the stages

local function path(E, base, ext) return tree.path(E, base, ext) end

-- The certificates of a PEM bundle, each re-encoded (one spelling per certificate: compared as text).
local function certs_of(pem, what)
  local list, err = pki.read_certs(pem or "")
  if not list or #list == 0 then error(("%s: no certificate: %s"):format(what, tostring(err or "empty")), 0) end
  local out = {}
  for i, c in ipairs(list) do out[i] = assert(c:pem()) end
  return out
end

local function first_cert(pem, what) return certs_of(pem, what)[1] end

-- Writes a stage's files (write()), then restarts the static Pods that read them only at start, one
-- at a time (etcd only while the other members keep a quorum). They are written down first
-- (renewal.restart's pending list), so a run killed in between restarts them the next time.
local function with_restarts(ctx, r, write)
  local comps = cas.restarts(r.cas)
  if #comps > 0 and not ctx.dry_run then restart.mark(comps) end
  write()
  if #comps == 0 then return end
  if ctx.dry_run then
    log.info("[dryrun] Would restart %s, one at a time", table.concat(comps, ", "))
    return
  end
  local c, node = cadmin.client(ctx), ctx.data.rotation_node
  local locked, holder, since = state.lock(c, node)
  if not locked then
    error(("%s %s has been restarting its control plane for this rotation since %s: one node at a time keeps etcd's " ..
      "quorum. Run this here again once it is done (its files are written; the restart is still to do)"):format(
      M.PREFIX, tostring(holder), os.date("!%Y-%m-%dT%H:%M:%SZ", since)), 0)
  end
  local ok, err, skipped = pcall(restart.run, ctx, restart.pending(), { what = "new CA files", force = ctx.flags.force })
  local uok, uerr = pcall(state.unlock, c, node)
  if not ok then error(tostring(err) .. (uok and "" or ("; " .. tostring(uerr))), 0) end
  if not uok then error(uerr, 0) end
  if #skipped > 0 then
    error(("%s %s not restarted: %s. The stage is not done until it is: run this again once the other members " ..
      "are healthy (or with --force, which costs etcd its quorum while this member restarts)")
      :format(M.PREFIX, skipped[1].component, skipped[1].why), 0)
  end
end

-- This node's view of the rotation, read afresh (other nodes move on between phases).
function M.rotation(ctx)
  return state.read(cadmin.client(ctx))
end

local function env(ctx) return tree.env(ctx) end

local function need_rotation(ctx)
  local r = M.rotation(ctx)
  if not r then
    error("no CA rotation is under way: start one with `moonadm certs rotate-ca --ca front-proxy` on a control plane", 0)
  end
  local node = ctx.data.rotation_node
  if not r.stages[node] then
    error(("%s this node (%s) is not one of the rotation's control planes (%s): it joined after the rotation " ..
      "started. Finish the rotation on those first, then reset this node and join it again (it takes the new CAs " ..
      "from a fresh `moonadm init phase upload-certs --upload-certs`)"):format(M.PREFIX, node,
      table.concat(r.control_planes, ", ")), 0)
  end
  return r
end

-- kubeadm-certs holds the CAs a joining control plane takes: the old ones, once a rotation starts.
local function drop_uploaded(ctx, c, why)
  local ref = { apiVersion = "v1", kind = "Secret", namespace = certs_upload.NS, name = certs_upload.SECRET }
  local live, err = capi.lookup(c, ref)
  if err then error(("%s reading Secret %s/%s: %s"):format(M.PREFIX, certs_upload.NS, certs_upload.SECRET, tostring(err)), 0) end
  if not live then return end
  if ctx.dry_run then
    log.info("[dryrun] Would delete Secret %s/%s (%s)", certs_upload.NS, certs_upload.SECRET, why)
    return
  end
  local ok, derr = c:delete(ref, { ignore_not_found = true })
  if not ok then error(("%s deleting Secret %s/%s: %s"):format(M.PREFIX, certs_upload.NS, certs_upload.SECRET, tostring(derr)), 0) end
  log.info("%s Deleted Secret %s/%s: %s", M.PREFIX, certs_upload.NS, certs_upload.SECRET, why)
end

-- Refuses what must not happen during a rotation (uploading CAs for a control-plane join: that node
-- would not be one of the rotation's), naming the rotation.
function M.refuse_during(ctx, what)
  local r = M.rotation(ctx)
  if not r then return end
  error(("%s a rotation of the %s CA(s) is under way (started by %s at %s): not %s now. A control plane joins " ..
    "before or after a rotation: finish it first (`moonadm certs rotate-ca status`)"):format(M.PREFIX,
    table.concat(r.cas, ", "), tostring(r.by), tostring(r.started), what), 0)
end

-- ---- start ----

-- The rotation's certificate key: --certificate-key, else the one this run's start made.
local function key_of(ctx)
  local k = ctx.flags["certificate-key"]
  if k and k ~= "" then
    if not k:match("^%x+$") or #k ~= 64 then error("--certificate-key must be a hex-encoded string of 32 bytes", 0) end
    return k
  end
  return ctx.data.rotation_key
end

-- The control planes a rotation covers: every Node labelled control-plane, each Ready (a rotation
-- needs every one of them to take each stage); raises naming those that are not.
local function control_planes(c)
  local nodes, err = cnode.kubelets(c)
  if not nodes then error(M.PREFIX .. " " .. err, 0) end
  local names, down = {}, {}
  for _, n in ipairs(nodes) do
    if n.control_plane then
      names[#names + 1] = n.node
      if not n.ready then down[#down + 1] = n.node end
    end
  end
  if #down > 0 then
    error(("%s refusing to start: control plane(s) %s not Ready: every control plane takes each stage of a " ..
      "rotation; bring them back (or remove them with `moonadm reset` and `kubectl delete node`) first")
      :format(M.PREFIX, table.concat(down, ", ")), 0)
  end
  return names
end

-- The rotation r under way taken up (the same CAs as --ca, if given; the key opens them).
local function take_up(ctx, r, wanted)
  if wanted and table.concat(wanted, ",") ~= table.concat(r.cas, ",") then
    error(("%s a rotation of the %s CA(s) started by %s at %s is under way: finish it (run `moonadm certs " ..
      "rotate-ca --certificate-key KEY` on every control plane until `moonadm certs rotate-ca status` says " ..
      "done) before another starts"):format(M.PREFIX, table.concat(r.cas, ", "), tostring(r.by), tostring(r.started)), 0)
  end
  log.info("%s Taking up the rotation of the %s CA(s) that %s started at %s", M.PREFIX, table.concat(r.cas, ", "),
    tostring(r.by), tostring(r.started))
  ctx.data.rotation_key = key_of(ctx)
  -- checked here, before any file changes: the key opens every new CA key
  for _, name in ipairs(r.cas) do state.new_key(r, name, ctx.data.rotation_key) end
  if ctx.inputs then ctx.inputs.rotation = r.id end -- the journal's digests name this rotation from here on
  -- (a start killed before it deleted kubeadm-certs: done here)
  drop_uploaded(ctx, cadmin.client(ctx), "it holds the old CAs; a control plane joins before or after a rotation, not during it")
  return r
end

-- The new CAs of a rotation of wanted: per_ca[name] = {old_crt, new_crt, new_key_pem}, and whether
-- this node holds every old CA key.
local function new_cas(ctx, E, wanted)
  local per_ca, old_key_kept = {}, true
  for _, name in ipairs(wanted) do
    local ca = cas.by_name[name]
    if ca.local_etcd and certlist.external_etcd(ctx.cfg.cluster) then
      error(("%s --ca %s: this cluster's etcd is external: its CA is rotated where that etcd is run"):format(M.PREFIX, name), 0)
    end
    local crtp = path(E, ca.base, "crt")
    local current = certs_of(ctx:read(crtp), crtp)
    if #current > 1 then
      error(("%s %s holds %d certificates: an earlier rotation did not end. Put the CA this cluster signs with " ..
        "alone in it, then start again"):format(M.PREFIX, crtp, #current), 0)
    end
    old_key_kept = old_key_kept and ctx:exists(path(E, ca.base, "key"))
    local k = tree.take_key(E, ca.base)
    local cert, err = pki.create_ca(k, tree.spec(E, certlist.by_name[ca.row]))
    if not cert then error(("%s creating the new %s CA: %s"):format(M.PREFIX, name, err), 0) end
    per_ca[name] = { old_crt = current[1], new_crt = assert(cert:pem()), new_key_pem = assert(k:pem()) }
    log.info("%s Generated a new %s CA (valid until %s)", M.PREFIX, name, os.date("!%Y-%m-%dT%H:%M:%SZ", cert:info().not_after))
  end
  return per_ca, old_key_kept
end

-- Starts a rotation of the CAs --ca names, or takes up the one under way. Sets ctx.data.rotation_key.
function M.start(ctx)
  local c = cadmin.client(ctx)
  local node = ctx.data.rotation_node
  local wanted
  if ctx.flags.ca and ctx.flags.ca ~= "" then
    local err
    wanted, err = cas.parse(ctx.flags.ca)
    if not wanted then error(err, 0) end
  end
  local r = state.read(c)
  if r then return take_up(ctx, r, wanted) end
  if not wanted then
    -- a node run once more after the rotation ended: nothing is left to do
    log.info("%s No CA rotation is under way: nothing to do (`--ca front-proxy` starts one)", M.PREFIX)
    ctx.data.rotation_waiting = "none"
    return nil
  end
  local names = control_planes(c)
  local is_cp = false
  for _, n in ipairs(names) do is_cp = is_cp or n == node end
  if not is_cp then
    error(("%s this node (%s) is not a control plane of the cluster (%s): run it on one"):format(M.PREFIX, node,
      table.concat(names, ", ")), 0)
  end
  local key = key_of(ctx) or pki.certificate_key()
  local per_ca, old_key_kept = new_cas(ctx, env(ctx), wanted)
  local info = { id = pki.random_hex(8), cas = wanted, started = os.date("!%Y-%m-%dT%H:%M:%SZ"), by = node,
    control_planes = names, old_key_kept = old_key_kept }
  if ctx.dry_run then
    log.info("[dryrun] Would create Secret %s/%s: a rotation of the %s CA(s) over %s", state.NS, state.NAME,
      table.concat(wanted, ", "), table.concat(names, ", "))
    ctx.data.rotation_key = key
    return nil
  end
  -- the key first: a run killed after the Secret is made must not leave a rotation nobody can open
  log.info("%s Starting a rotation of the %s CA(s) over the control planes %s. Its certificate key (pass it as " ..
    "--certificate-key to `moonadm certs rotate-ca` on every control plane; it opens the new CA keys):", M.PREFIX,
    table.concat(wanted, ", "), table.concat(names, ", "))
  log.result(key)
  if not state.create(c, state.object(info, per_ca, key)) then
    log.info("%s Another node started a rotation at the same moment: taking up that one (the key above is not " ..
      "its key: pass the one printed there as --certificate-key)", M.PREFIX)
    ctx.flags.ca = nil
    return M.start(ctx)
  end
  if ctx.inputs then ctx.inputs.rotation = info.id end
  drop_uploaded(ctx, c, "it holds the old CAs; a control plane joins before or after a rotation, not during it")
  ctx.data.rotation_key = key
  return state.read(c)
end

-- ---- the per-node stages ----

-- The names of the etcd cluster's members, asked of this node's member: {name = true}; raises when it
-- cannot answer (nobody is taken for gone on a guess).
function M.etcd_members(ctx)
  local m, err = members.new { endpoints = { "https://127.0.0.1:2379" }, cert_dir = fs.path(config.cert_dir(ctx.cfg.cluster)),
    dial_timeout = 2, request_timeout = 5, timeout = 10 }
  if not m then error(("%s asking the local etcd member for the members: %s"):format(M.PREFIX, tostring(err)), 0) end
  local list, lerr = m:list()
  m:close()
  if not list then error(("%s listing the etcd members: %s"):format(M.PREFIX, tostring(lerr)), 0) end
  local out = {}
  for _, x in ipairs(list) do if x.name and x.name ~= "" then out[x.name] = true end end
  return out
end

-- Whether every control plane of the rotation has reached stage (the run condition of the phase
-- that needs it); says which have not, and what to run there.
function M.ready_for(ctx, stage, next_step)
  if ctx.data.rotation_waiting then return false end -- said once, by the first stage that waits
  local r = M.rotation(ctx)
  if not r then return false end
  local behind = state.behind(r, stage)
  if #behind > 0 then
    -- a control plane removed meanwhile (reset, its Node deleted) is not waited for
    local nodes, err = cnode.kubelets(cadmin.client(ctx))
    if not nodes then error(M.PREFIX .. " " .. err, 0) end
    local present, still = {}, {}
    for _, n in ipairs(nodes) do present[n.node] = true end
    local in_etcd = {}
    for _, name in ipairs(r.cas) do
      if cas.by_name[name].local_etcd then in_etcd = M.etcd_members(ctx) end
    end
    for _, n in ipairs(behind) do
      if present[n] or in_etcd[n] then still[#still + 1] = n
      else log.info("%s %s has left the cluster (no Node object, no etcd member): not waiting for it", M.PREFIX, n) end
    end
    behind = still
  end
  if #behind == 0 then return true end
  ctx.data.rotation_waiting = stage
  log.info("%s Not yet %s here: %s %s not at %q yet. Run `moonadm certs rotate-ca --certificate-key KEY` there, " ..
    "then here again (`moonadm certs rotate-ca status` shows every node)", M.PREFIX, next_step,
    table.concat(behind, ", "), #behind == 1 and "is" or "are", stage)
  return false
end

-- The rotation, this node and its PKI environment when this node has yet to take stage; nil (said:
-- "<node> <already>") when it took it.
local function to_take(ctx, stage, already)
  local r = need_rotation(ctx)
  local node = ctx.data.rotation_node
  if state.RANK[r.stages[node]] >= state.RANK[stage] then
    log.info("%s %s %s already (stage %s)", M.PREFIX, node, already, r.stages[node])
    return nil
  end
  return r, node, env(ctx)
end

local function record(ctx, stage)
  if ctx.dry_run then
    log.info("[dryrun] Would record stage %s for %s", stage, ctx.data.rotation_node)
    return
  end
  state.set_stage(cadmin.client(ctx), ctx.data.rotation_node, stage)
  log.info("%s %s is at stage %s", M.PREFIX, ctx.data.rotation_node, stage)
end

local function write_bundle(ctx, E, ca, list)
  ctx:write(path(E, ca.base, "crt"), table.concat(list), MODE_CRT)
end

-- The new CAs in what the API servers publish (extension-apiserver-authentication) before this node's
-- leaves of them go out: an aggregated API server trusts a front-proxy client by that ConfigMap, which
-- each apiserver updates once it read its bundle again (seconds, at most a minute).
wait_published = function(ctx, r)
  local c = cadmin.client(ctx)
  for _, name in ipairs(r.cas) do
    local key = cas.by_name[name].published
    if key and not ctx.dry_run then
      local new = first_cert(r.ca[name].new_crt, "the rotation's new " .. name .. " CA")
      capi.poll(("the new %s CA in ConfigMap kube-system/%s"):format(name, M.PUBLISHED.name), M.PUBLISH_TIMEOUT, 1, function()
        local cm, err = capi.lookup(c, M.PUBLISHED)
        if err then return nil, err end
        local data = cm and shape.strings(cm, "data")
        local text = data and data[key]
        if not text or text == "" then return nil, "not published" end
        for _, pem in ipairs(certs_of(text, M.PUBLISHED.name .. " " .. key)) do
          if pem == new then return true end
        end
        return nil, "the API servers do not publish it yet"
      end)
    end
  end
end

-- trust-both: the CA file a bundle, old first (the old key still signs: kubeadm reads a CA file's first
-- certificate as the one its key matches).
function M.trust_both(ctx)
  local r, node, E = to_take(ctx, "trust-both", "trusts both CAs")
  if not r then return end
  for _, name in ipairs(r.cas) do
    -- this node's CA must be the one the rotation replaces (a rerun finds the bundle it wrote)
    local crtp = path(E, cas.by_name[name].base, "crt")
    local have = certs_of(ctx:read(crtp), crtp)
    local old = first_cert(r.ca[name].old_crt, "the rotation's old " .. name .. " CA")
    if have[1] ~= old then
      error(("%s %s is not the %s CA the rotation replaces (the one %s had): put that CA's certificate back in " ..
        "it, or reset this node and join it again"):format(M.PREFIX, crtp, name, tostring(r.by)), 0)
    end
  end
  with_restarts(ctx, r, function()
    for _, name in ipairs(r.cas) do
      local ca = cas.by_name[name]
      write_bundle(ctx, E, ca, { r.ca[name].old_crt, r.ca[name].new_crt })
      log.info("%s %s: trusting the old and the new %s CA (%s)", M.PREFIX, node, name, path(E, ca.base, "crt"))
    end
  end)
  record(ctx, "trust-both")
end

-- issued: the new CA signs here: its key, the bundle new first, every leaf of the CA reissued.
function M.issue(ctx)
  local r, node, E = to_take(ctx, "issued", "signs with the new CAs")
  if not r then return end
  local keys = {}
  for _, name in ipairs(r.cas) do keys[name] = state.new_key(r, name, key_of(ctx)) end -- all open, or nothing changes
  wait_published(ctx, r)
  with_restarts(ctx, r, function()
    for _, name in ipairs(r.cas) do
      local ca, key = cas.by_name[name], keys[name]
      local cert = assert(pki.read_cert(r.ca[name].new_crt))
      ctx:write(path(E, ca.base, "key"), assert(key:pem()), MODE_KEY)
      write_bundle(ctx, E, ca, { r.ca[name].new_crt, r.ca[name].old_crt })
      for _, leaf in ipairs(ca.leaves) do
        local row = certlist.by_name[leaf]
        local k = tree.take_key(E, leaf)
        local signed, err = pki.sign_cert(k, tree.spec(E, row), cert, key)
        if not signed then error(("%s signing %s with the new %s CA: %s"):format(M.PREFIX, leaf, name, err), 0) end
        tree.write_pair(E, row.base, k, signed)
        log.info("%s %s: %s signed by the new %s CA", M.PREFIX, node, leaf, name)
      end
    end
  end)
  record(ctx, "issued")
end

-- trust-new: the new CA alone.
function M.trust_new(ctx)
  local r, node, E = to_take(ctx, "trust-new", "trusts only the new CAs")
  if not r then return end
  with_restarts(ctx, r, function()
    for _, name in ipairs(r.cas) do
      local ca = cas.by_name[name]
      write_bundle(ctx, E, ca, { r.ca[name].new_crt })
      log.info("%s %s: trusting only the new %s CA", M.PREFIX, node, name)
    end
  end)
  record(ctx, "trust-new")
end

-- ---- finish ----

-- Drops the old CAs from extension-apiserver-authentication. Each API server's trust controller
-- merges what it trusts into that ConfigMap and never removes a CA before it expires, so aggregated
-- API servers would go on trusting the old one for years; once every API server trusts only the new
-- CA, one that syncs after the edit no longer puts it back. Returns when the edit holds M.SETTLE s.
local function drop_published(ctx, c, r)
  local deadline = core.monotonic() + M.PUBLISH_TIMEOUT
  local edited_at -- when this run last dropped them
  while true do
    local cm, err = capi.lookup(c, M.PUBLISHED)
    if err then error(("%s reading ConfigMap kube-system/%s: %s"):format(M.PREFIX, M.PUBLISHED.name, tostring(err)), 0) end
    if not cm then return end
    local data, why = shape.strings(cm, "data")
    if not data then error(("%s ConfigMap kube-system/%s: %s"):format(M.PREFIX, M.PUBLISHED.name, why), 0) end
    local changed = false
    for _, name in ipairs(r.cas) do
      local key = cas.by_name[name].published
      local old = first_cert(r.ca[name].old_crt, "the rotation's old " .. name .. " CA")
      if key and data[key] and data[key] ~= "" then
        local keep = {}
        for _, pem in ipairs(certs_of(data[key], M.PUBLISHED.name .. " " .. key)) do
          if pem ~= old then keep[#keep + 1] = pem end
        end
        if #keep == 0 then
          error(("%s ConfigMap kube-system/%s publishes only the old %s CA: the API servers have not read their new " ..
            "CA files. Check that each kube-apiserver runs, then run this again"):format(M.PREFIX, M.PUBLISHED.name, name), 0)
        end
        local text = table.concat(keep)
        if text ~= data[key] and #keep < #certs_of(data[key], key) then
          data[key], changed = text, true
        end
      end
    end
    if not changed then
      -- in place since the last edit (or never there): it held for SETTLE seconds
      if not edited_at or core.monotonic() - edited_at >= M.SETTLE then return end
    elseif ctx.dry_run then
      log.info("[dryrun] Would drop the old CA(s) from ConfigMap kube-system/%s", M.PUBLISHED.name)
      return
    else
      if core.monotonic() > deadline then
        error(("%s an API server keeps publishing the old CA in ConfigMap kube-system/%s after %ds: it still " ..
          "trusts it. Check that every control plane is at stage trust-new and its kube-apiserver read the CA " ..
          "files again, then run `moonadm certs rotate-ca --certificate-key KEY` again"):format(M.PREFIX,
          M.PUBLISHED.name, M.PUBLISH_TIMEOUT), 0)
      end
      cm.data = data
      local got, uerr = c:update(cm)
      if not got and uerr.code ~= 409 then
        error(("%s updating ConfigMap kube-system/%s: %s"):format(M.PREFIX, M.PUBLISHED.name, tostring(uerr)), 0)
      end
      if got then
        log.info("%s Dropped the old CA(s) from ConfigMap kube-system/%s (aggregated API servers read it)", M.PREFIX,
          M.PUBLISHED.name)
        edited_at = core.monotonic()
      end
    end
    core.sleep(1)
  end
end

function M.finish(ctx)
  local r = M.rotation(ctx)
  if not r then
    log.info("%s No rotation is under way: nothing to finish", M.PREFIX)
    return
  end
  local c = cadmin.client(ctx)
  drop_published(ctx, c, r)
  drop_uploaded(ctx, c, "it held the old CAs. Upload the new ones for a control-plane join with " ..
    "`moonadm init phase upload-certs --upload-certs`")
  if ctx.dry_run then
    log.info("[dryrun] Would delete Secret %s/%s: the rotation ends", state.NS, state.NAME)
    return
  end
  state.delete(c)
  log.info("%s The %s CA(s) are rotated: every control plane trusts and signs with the new CA alone", M.PREFIX,
    table.concat(r.cas, ", "))
end

-- ---- status ----

-- The rotation as rows for `status`: {cas, by, started, nodes = {{name, stage}}} | nil.
function M.status(c)
  local r = state.read(c)
  if not r then return nil end
  local rows = {}
  for _, n in ipairs(r.control_planes) do rows[#rows + 1] = { name = n, stage = r.stages[n] } end
  table.sort(rows, function(a, b) return a.name < b.name end)
  return { cas = r.cas, by = r.by, started = r.started, old_key_kept = r.old_key_kept, nodes = rows }
end

return M
