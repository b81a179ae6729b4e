-- The phase runner: kubeadm's workflow semantics (generated `/` paths, pre-order execution,
-- --skip-phases skipping whole subtrees, `phase X` filters, run_if, "error execution phase X"),
-- plus what kubeadm lacks: feature gates as data (`when`), a static requires/provides check of the
-- whole flow before anything runs, and a journal that lets --resume skip finished phases.
local errors = require "framework.errors"
local lazy = require "framework.lazy"
local context = lazy.require "framework.context" -- CACHES, read during a run only
local log = require "framework.log"
local results = require "framework.results"
local core = require "moonadm.core"
local fs = require "moonadm.fs"

local M = {}

local function list_of(v, ctx)
  if type(v) == "function" then v = v(ctx) end
  return v or {}
end

local function clean_name(name)
  return (name:lower():gsub(" .*$", ""))
end

-- Flattens a flow into nodes in execution order (depth-first pre-order). Each node:
-- {phase, path, depth, parent, status = "run"|"skipped"|"gated", gate}.
function M.resolve(flow, ctx)
  local nodes, by_path = {}, {}
  local function visit(list, parent, depth)
    for _, p in ipairs(list) do
      local name = clean_name(p.name)
      local path = parent and (parent.path .. "/" .. name) or name
      if by_path[path] then error(("flow %s: phase %s declared twice"):format(flow.name, path), 0) end
      local node = { phase = p, name = name, path = path, depth = depth, parent = parent, status = "run" }
      if parent and parent.status == "gated" then
        node.status, node.gate = "gated", parent.gate
      elseif p.when then
        local want = p.when.value
        if want == nil then want = true end
        if (ctx.gates[p.when.gate] or false) ~= want then
          node.status, node.gate = "gated", ("%s=%s"):format(p.when.gate, tostring(want))
        end
      end
      nodes[#nodes + 1], by_path[path] = node, node
      if p.children then visit(p.children, node, depth + 1) end
    end
  end
  visit(flow.phases, nil, 0)
  return nodes, by_path
end

local function descends(node, ancestor)
  while node do
    if node == ancestor then return true end
    node = node.parent
  end
  return false
end

-- Applies a `phase X` filter and the skip list. Unknown names are errors, as in kubeadm.
function M.select(nodes, by_path, opts)
  if opts.filter then
    local target = by_path[opts.filter]
    if not target then return nil, "invalid phase name: " .. opts.filter end
    for _, n in ipairs(nodes) do
      if not descends(n, target) and n.status == "run" then n.status = "filtered" end
    end
  end
  for _, name in ipairs(opts.skip or {}) do
    local target = by_path[name]
    if not target then return nil, "invalid phase name: " .. name end
    for _, n in ipairs(nodes) do
      if descends(n, target) and n.status == "run" then n.status = "skipped" end
    end
  end
  return nodes
end

-- Checks that every phase that will run gets each capability it requires from a phase before it.
-- A capability of a phase the user skipped is assumed present (the user took it on), as kubeadm
-- assumes when you skip `certs` and bring your own. Returns true | nil, message naming both phases.
function M.check(nodes, ctx)
  local have, assumed = {}, {}
  for _, n in ipairs(nodes) do
    if n.status == "skipped" then
      for _, cap in ipairs(list_of(n.phase.provides, ctx)) do assumed[cap] = n.path end
    end
  end
  for i, n in ipairs(nodes) do
    if n.status == "run" then
      for _, cap in ipairs(list_of(n.phase.requires, ctx)) do
        if not have[cap] and not assumed[cap] then
          local later
          for j = i + 1, #nodes do
            if nodes[j].status == "run" then
              for _, c in ipairs(list_of(nodes[j].phase.provides, ctx)) do
                if c == cap then later = later or nodes[j].path end
              end
            end
          end
          local why = n.phase.requires_why and n.phase.requires_why[cap]
          local msg
          if later then
            msg = ("phase %q requires %q, which phase %q provides only later: move %q before %q")
              :format(n.path, cap, later, later, n.path)
          else
            msg = ("phase %q requires %q, which no earlier phase of this flow provides"):format(n.path, cap)
          end
          return nil, msg .. (why and ("\n" .. why) or "")
        end
      end
      for _, cap in ipairs(list_of(n.phase.provides, ctx)) do have[cap] = have[cap] or n.path end
    end
  end
  return true
end

local function fmt_duration(s)
  if s < 1 then return ("%dms"):format(math.floor(s * 1000 + 0.5)) end
  return ("%.2fs"):format(s)
end

local function data_keys(ctx)
  local t = {}
  for k in pairs(ctx.data or {}) do t[k] = true end
  return t
end

-- The ctx.data keys `who` added that neither its declaration (a phase's `data`, next to `provides`;
-- a run-data initializer's keys) nor the per-run memos (framework.context CACHES) name. Returns the
-- failure's message, or nil: every value passed from phase to phase is declared where it is made.
local function undeclared_data(who, declared_list, ctx, before)
  local declared = {}
  for _, k in ipairs(list_of(declared_list, ctx)) do declared[k] = true end
  local bad = {}
  for k in pairs(ctx.data or {}) do
    if before[k] == nil and not declared[k] and not context.CACHES[k] then bad[#bad + 1] = tostring(k) end
  end
  if #bad == 0 then return nil end
  table.sort(bad)
  return ("%s set ctx.data.%s without declaring it (data = {...} next to provides)"):format(who,
    table.concat(bad, ", ctx.data."))
end

-- What a step left behind: API failures it never read, keys it did not declare. nil when clean.
-- where: a phase path or "join preparation"; who: how the data check names it.
local function leftovers(where, who, declared, ctx, before)
  return results.unchecked(where) or undeclared_data(who, declared, ctx, before)
end

-- The run-data initializer (kubeadm's SetDataInitializer): what every phase of the run reads,
-- made once before the flow is resolved (it may set the gates the flow's `when` reads).
-- init = {run = fn(ctx), keys = {declared ctx.data keys}, name = "join preparation"}.
local function initialize(init, ctx)
  if not init then return true end
  local before = data_keys(ctx)
  local ok, err = pcall(init.run, ctx)
  if not ok then return nil, err end
  local left = leftovers(init.name, init.name, init.keys, ctx, before)
  if left then return nil, left end
  return true
end

-- --resume: true when the journal records this phase done with the same inputs (it is skipped).
local function resumed(n, opts, digest)
  local journal, p = opts.journal, n.phase
  if not (opts.resume and journal) then return false end
  local e = journal.data.phases[n.path]
  if not p.always_run and journal:done(n.path, digest) then
    log.info("[resume] Skipping phase %q: the journal records it done%s with the same inputs", n.path,
      e and e.done and (" at " .. os.date("!%Y-%m-%dT%H:%M:%SZ", e.done)) or "")
    log.event { type = "phase-skip", phase = n.path, reason = "resume" }
    return true
  end
  if p.run or p.run_if or p.prepare then
    -- Checks (preflight) always run again: they are what decides whether resuming is safe.
    local why = p.always_run and "it is a check, which always runs again"
      or (e and "its inputs changed since the journal recorded it")
      or "the journal does not record it as done"
    log.info("[resume] Running phase %q: %s", n.path, why)
  end
  return false
end

-- A phase's prepare(ctx, selected) gets the names of its children that will run (the runner's
-- selection: filter, skips, gates), so no phase reads --skip-phases. Its error is raised by the
-- first of them that runs ("error execution phase certs/ca: ..."), or by a leaf phase itself.
local function prepare(run, n, ctx)
  local sel = {}
  for _, m in ipairs(run.nodes) do
    if m.parent == n and m.status == "run" then sel[m.name] = true end
  end
  local before = data_keys(ctx)
  local ok, err = pcall(n.phase.prepare, ctx, sel)
  if ok then
    local bad = undeclared_data("phase " .. n.path, n.phase.data, ctx, before)
    if bad then ok, err = false, bad end
  end
  if ok then return true end
  if not n.phase.children then return nil, ("error execution phase %s: %s"):format(n.path, errors.message(err)) end
  run.deferred = { node = n, err = err }
  return true
end

-- The phase's run, timed and announced; a deferred prepare error of an ancestor is raised here.
local function call(run, n, ctx)
  log.event { type = "phase-start", phase = n.path }
  if log.tty and log.verbosity == 0 then log.err:write(("\27[2m▸ %s\27[0m\n"):format(n.path)) end
  ctx.artifacts, ctx.phase_path = {}, n.path
  if run.deferred and descends(n, run.deferred.node) then
    local err = run.deferred.err
    run.deferred = nil
    return false, err
  end
  return xpcall(n.phase.run, function(e)
    if errors.is(e) or log.verbosity < 5 then return e end
    return debug.traceback(tostring(e), 2)
  end, ctx)
end

-- One selected phase: resume, run condition, prepare, run, checks, journal record.
local function execute_node(run, n, ctx, opts)
  local p = n.phase
  local digest = opts.journal and opts.journal:digest(n.path, ctx)
  if resumed(n, opts, digest) then n.result = "resumed" return true end
  local go = true
  if p.run_if then
    local ok, v = pcall(p.run_if, ctx)
    if not ok then return nil, ("error execution run condition for phase %s: %s"):format(n.path, errors.message(v)) end
    go = v
  end
  if not go then
    log.v(1, "[%s] run condition false: skipped", n.path)
    n.result = "condition"
    return true
  end
  if p.prepare then
    local ok, err = prepare(run, n, ctx)
    if not ok then return nil, err end
  end
  if not p.run then return true end
  local t0, before = core.monotonic(), data_keys(ctx)
  local ran, err = call(run, n, ctx)
  local dt = core.monotonic() - t0
  local failed_with = not ran and errors.message(err) -- read first: a raised API error is checked
  local left = ran and leftovers(n.path, "phase " .. n.path, p.data, ctx, before)
  if left then ran, err, failed_with = false, left, left end
  if not ran then
    log.event { type = "phase-end", phase = n.path, status = "failed", duration = dt }
    local msg = ("error execution phase %s: %s"):format(n.path, failed_with)
    return nil, errors.is(err) and errors.new(err.code, msg) or msg
  end
  log.event { type = "phase-end", phase = n.path, status = "done", duration = dt }
  log.v(1, "[%s] done in %s", n.path, fmt_duration(dt))
  n.result = "done"
  if opts.journal then
    local ok, jerr = opts.journal:record(n.path, digest, ctx.artifacts)
    if not ok then return nil, ("error execution phase %s: journal: %s"):format(n.path, jerr) end
  end
  return true
end

-- Runs the selected nodes, in order. opts: {journal = journal or nil, resume = bool}.
-- Returns true | nil, err (err is an errors object or string, already wrapped with the phase name).
-- The run's file writes form one group (moonadm.fs group commit): made durable together whenever
-- something outside could look (a process, an API or etcd call, a wait: the bindings commit
-- first) and at the end, in one journal commit instead of two fsyncs per file. The journal is the
-- group's first file, renamed first: a crash mid-commit leaves it naming phases whose files did
-- not land, which --resume runs again (journal:done checks each recorded file on disk).
function M.execute(nodes, ctx, opts)
  opts = opts or {}
  local run = { nodes = nodes }
  fs.group_begin()
  local r = table.pack(pcall(function()
    for _, n in ipairs(nodes) do
      if n.status == "run" then
        local ok, err = execute_node(run, n, ctx, opts)
        if not ok then return nil, err end
      end
    end
    return true
  end))
  local cok, cerr = fs.group_end()
  if not cok and not (r[1] and r[2]) then -- the phase's own error is what is raised; this one is said too
    log.error("making the run's files durable failed as well: %s", cerr)
  end
  if not r[1] then error(r[2], 0) end
  if not cok and r[2] then return nil, ("making the run's files durable failed: %s"):format(cerr) end
  return table.unpack(r, 2, r.n)
end

-- A flow the static check refuses runs only with --force-order, said loudly.
local function refused(flow, err, opts)
  if not opts.force_order then
    return ("flow %q refused before any phase ran: %s\n(--force-order runs it anyway, for experiments)")
      :format(flow.name, err)
  end
  local bar = ("!"):rep(78)
  log.warn("%s", bar)
  log.warn("--force-order: running flow %q although its static check refuses it:", flow.name)
  for line in (err .. "\n"):gmatch("(.-)\n") do log.warn("  %s", line) end
  log.warn("this run is an experiment: it may hang, fail midway or leave a broken node")
  log.warn("%s", bar)
  log.event { type = "force-order", flow = flow.name, refusal = err }
  return nil
end

-- The whole run of `moonadm init` (or any flow): the run data initialized, the flow resolved
-- and selected, its static check, its phases executed. opts: {init = initializer (above),
-- journal, resume, filter = "phase/path", skip = {paths}, force_order}. ctx.journal is the run's.
-- Returns true | nil, err; an initializer's error is returned as it is (no phase ran).
function M.run(flow, ctx, opts)
  ctx.journal = opts.journal
  local ok, err = initialize(opts.init, ctx)
  if not ok then return nil, err end
  local nodes, by_path = M.resolve(flow, ctx)
  ok, err = M.select(nodes, by_path, opts)
  if not ok then return nil, err end
  if not opts.filter then
    ok, err = M.check(nodes, ctx)
    local refusal = not ok and refused(flow, err, opts)
    if refusal then return nil, refusal end
  end
  return M.execute(nodes, ctx, opts)
end

-- The tree as kubeadm's help shows it, or as data for `moonadm phases -o json`.
function M.describe(nodes, include_hidden)
  local rows = {}
  for _, n in ipairs(nodes) do
    if include_hidden or not n.phase.hidden then
      rows[#rows + 1] = {
        name = n.name, path = n.path, depth = n.depth, status = n.status == "filtered" and "skipped" or n.status,
        gate = n.gate, desc = n.phase.desc, hidden = n.phase.hidden or nil,
        experimental = n.phase.experimental or nil,
      }
    end
  end
  return rows
end

return M
