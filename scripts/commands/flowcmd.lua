-- What `moonadm init|join|reset|upgrade apply|upgrade node` share: flags, config, gates, the
-- flow (stock, or --flow FILE), `phase <name>` subcommands, the journal and --resume.
local lazy = require "framework.lazy"
local cli = require "framework.cli"
local common = require "commands.common"
local globals = require "framework.globals"
local config = require "config"
local context = require "framework.context"
local errors = require "framework.errors"
local flags_mod = require "framework.argv"
local journal_mod = lazy.require "framework.journal" -- with a root
local log = require "framework.log"
local runner = require "framework.runner"
local site = require "site.load"
local util = require "framework.util"
local api = require "site.api"
local framework_flow = require "framework.flow"

local M = {}

M.run_flags = {
  { name = "config", type = "string", help = "Path to a kubeadm configuration file" },
  { name = "dry-run", type = "bool", help = "Don't apply any changes; just output what would be done" },
  { name = "skip-phases", type = "list", help = "List of phases to be skipped" },
  { name = "ignore-preflight-errors", type = "list", help = "A list of checks whose errors will be shown as warnings. Example: 'IsPrivilegedUser,Swap'. Value 'all' ignores errors from all checks" },
  { name = "resume", type = "bool", help = "Skip phases the journal records as done with the same inputs, and accept their files in preflight" },
  { name = "strict-config", type = "bool", help = "Unknown configuration fields are errors, not warnings" },
  { name = "flow", type = "string", help = "A Lua file returning the flow to run instead of the stock one: its entries, one per line (see docs/scripting.md)" },
  { name = "force-order", type = "bool", help = "Run a flow the static requires/provides check refuses (experiments only; says so loudly)" },
  { name = "node-runtime", type = "string", default = os.getenv("MOONADM_NODE_RUNTIME") or "systemd",
    help = "How this node's kubelet is driven: systemd, none or lab (default: $MOONADM_NODE_RUNTIME or systemd)" },
  { name = "output", short = "o", type = "string", help = "json: a machine-readable event stream on stdout" },
}

for _, f in ipairs(site.flags) do M.run_flags[#M.run_flags + 1] = f end

-- Loads the flow: the stock one, or a user's Lua file returning its entries (or a flow object),
-- see docs/scripting.md.
function M.load_flow(name, file)
  if not file then return require("flows." .. name) end
  return site.flow_file(name, file)
end

-- The phase list kubeadm prints in a command's long help.
local function phase_list(desc, flow_name, flow, ctx)
  local nodes = runner.resolve(flow, ctx)
  local out = { desc, "", ('The "%s" command executes the following phases:'):format(flow_name), "```" }
  local rows, width = {}, 0
  for _, r in ipairs(runner.describe(nodes)) do
    local left = ("  "):rep(r.depth) .. (r.depth > 0 and "/" or "") .. r.name
    rows[#rows + 1] = { left, r.desc or "", r.status == "gated" and ("(gated: " .. r.gate .. ")") or "" }
    width = math.max(width, #left)
  end
  for _, r in ipairs(rows) do out[#out + 1] = util.rtrim(("%-" .. width .. "s  %s %s"):format(r[1], r[2], r[3])) end
  out[#out + 1] = "```"
  return table.concat(out, "\n")
end

-- What help sees of a flow: the stock flow (or the --scripts copy) under the default gates; no
-- user config is read (the gates are the ClusterConfiguration's, whichever the command).
local function help_flow(flow_name)
  local cfg = assert(config.load { kind = "init", files = {}, flags = {} })
  local gates = cfg.gates or {}
  local ctx = { gates = gates, cfg = cfg, flags = {}, data = {}, gate = function(self, g) return self.gates[g] == true end }
  local flow = M.load_flow(flow_name)
  return flow, ctx
end

-- The flags a phase subcommand shows: the phase's own list (kubeadm's InheritFlags), else its
-- parent's, else the command's flags. (A phase subcommand accepts all of the command's flags.)
local function phase_flags(phase, spec, inherited)
  local names = phase.flags or inherited
  if not names then return spec end
  local by = {}
  for _, f in ipairs(spec) do by[f.name] = f end
  local out = {}
  for _, name in ipairs(names) do
    local f = by[name]
    if not f then error(("phase %s declares flag --%s, which the command does not have"):format(phase.name, name), 0) end
    out[#out + 1] = f
  end
  return out
end

-- The help tree of a flow command: `help` (the command and its `phase` parent) and `help_for`
-- (`phase NAME [SUB]`), for framework/cli.lua. opts as M.main's, plus `cmd` (the words of the command).
function M.help_tree(opts)
  local spec = globals.flags(M.run_flags, opts.flags or {})
  local words = opts.cmd
  local tbl = {
    [""] = { short = opts.desc, args = opts.args, example = opts.example, flags = spec,
      long = function() local flow, ctx = help_flow(opts.flow) return phase_list(opts.long or opts.desc, words, flow, ctx) end },
    ["phase"] = { short = ("Use this command to invoke single phase of the %s workflow"):format(words), runnable = false, flags = {} },
  }
  local function phase_children(list)
    local out = {}
    for _, p in ipairs(list) do
      if not p.hidden then out[#out + 1] = { name = (p.name:lower():gsub(" .*$", "")), short = p.desc } end
    end
    return out
  end
  local function help_for(w)
    if w[1] ~= "phase" or #w < 2 then return nil end
    local flow = help_flow(opts.flow)
    local list, phase, path, inherited = flow.phases, nil, nil, nil
    for i = 2, #w do
      if w[i] == "all" and phase and phase.children and i == #w then
        return { short = phase.all_desc or ("Run all the subphases of " .. path), flags = phase_flags(phase, spec, inherited), children = {} }
      end
      if phase then inherited = phase.flags or inherited end
      local found
      for _, p in ipairs(list or {}) do
        if (p.name:lower():gsub(" .*$", "")) == w[i] and not p.hidden then found = p end
      end
      if not found then return nil end
      phase, path, list = found, path and (path .. "/" .. w[i]) or w[i], found.children
    end
    local children = {}
    if phase.children then
      children[1] = { name = "all", short = phase.all_desc or ("Run all the subphases of " .. path) }
      for _, c in ipairs(phase_children(phase.children)) do children[#children + 1] = c end
      table.sort(children, function(a, b) return a.name < b.name end)
    end
    return { short = phase.desc, long = phase.long, example = phase.example, args = phase.args,
      flags = phase_flags(phase, spec, inherited), children = children, runnable = phase.run ~= nil or not phase.children }
  end
  tbl["phase"].children = function()
    local c = phase_children(help_flow(opts.flow).phases)
    table.sort(c, function(a, b) return a.name < b.name end)
    return c
  end
  return tbl, help_for
end

-- Finds the phase path named by positional words: `certs apiserver` -> certs/apiserver,
-- `certs all` -> certs (the whole subtree). Returns path, remaining args, whether `all` was said.
local function phase_path(words, by_path)
  local best, used, path = nil, 0, nil
  for i, w in ipairs(words) do
    if w == "all" and best then return best, table.move(words, i + 1, #words, 1, {}), true end
    path = path and (path .. "/" .. w) or w
    if not by_path[path] then break end
    best, used = path, i
  end
  return best, table.move(words, used + 1, #words, 1, {}), false
end

-- skipPhases from the config file, used only when --skip-phases was not given (kubeadm's rule).
function M.config_skip_phases(cfg, name)
  if name == "upgrade-apply" or name == "upgrade-node" then
    local u = cfg.upgrade or {}
    local part = u[name == "upgrade-apply" and "apply" or "node"] or {}
    return part.skipPhases
  end
  local doc = cfg[name]
  return doc and doc.skipPhases
end

-- The command line: flags (with the global ones), the config, whether it is `... phase NAME`.
-- Returns the invocation {flags, set, args, as_phase, cfg}.
local function parse(opts)
  local spec = globals.flags(globals.global, M.run_flags, opts.flags or {})
  local argv = opts.argv
  local as_phase = argv[1] == "phase"
  if as_phase then argv = table.move(argv, 2, #argv, 1, {}) end
  local flags, args, set = flags_mod.parse(spec, argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  if flags.output == "json" then log.setup { verbosity = flags.v, json = true } end
  -- Only what the user typed reaches the config: a flag's default never counts as "mixed with --config".
  local given = {}
  for name in pairs(set) do given[name] = flags[name] end
  local cfg, err = config.load { kind = opts.kind, files = flags.config and { flags.config } or {},
    flags = given, args = not as_phase and args or nil, strict = flags["strict-config"] }
  if not cfg then error(err, 0) end
  for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
  -- (ControlPlaneKubeletLocalMode=false is warned about once, by the config's gate check)
  return { flags = flags, set = set, args = args, as_phase = as_phase, cfg = cfg }
end

-- `... phase WORDS`: the phase to run alone (a site phase not in the flow is appended), or the
-- help text to print instead (no words; a parent phase without `all`, as kubeadm). Returns
-- filter path | nil, help text.
local function phase_filter(opts, flow, ctx, words)
  local _, by_path = runner.resolve(flow, ctx)
  if #words > 0 and not by_path[words[1]] and words[1] ~= "all" then
    local p = framework_flow.lookup(flow.dir, words[1])
    if p then
      flow:append(p)
      _, by_path = runner.resolve(flow, ctx)
    end
  end
  local path, rest, whole = phase_path(words, by_path)
  if not path then
    if #words == 0 then return nil, cli.help_text { table.unpack(opts.cmd_words) } end
    error(("unknown phase %q for %q: see `moonadm %s --help` for the phase list"):format(
      table.concat(words, " "), opts.name, opts.name), 0)
  end
  local node = by_path[path]
  if node.phase.hidden then error(("phase %q is hidden and has no phase subcommand"):format(path), 0) end
  if node.phase.children and not whole and not node.phase.run then
    local w = { table.unpack(opts.cmd_words) }
    w[#w + 1] = "phase"
    for part in path:gmatch("[^/]+") do w[#w + 1] = part end
    return nil, cli.help_text(w)
  end
  ctx.args = rest
  return path
end

-- The site's scripts checked, the flow (stock, --flow, --phase-add) and the run's context, and
-- which of its phases run. Returns flow, ctx, run options | nil, nil, help text to print.
local function load(opts, inv)
  local flags, cfg = inv.flags, inv.cfg
  -- Site scripts run as root: refuse what others could have changed, before loading any of it.
  site.check_trust(flags)
  local flow = site.flow(opts.flow, flags)
  local ctx = context.new { command = opts.name, cfg = cfg, gates = cfg.gates or {}, flags = flags,
    flags_set = inv.set, root = flags.root, dry_run = flags["dry-run"], args = inv.args,
    inputs = { init = cfg.init, cluster = cfg.cluster, join = cfg.join, reset = cfg.reset, upgrade = cfg.upgrade,
      kubelet = cfg.kubelet, kubeproxy = cfg.kubeproxy, runtime = flags["node-runtime"], args = inv.args } }
  api.extend(ctx)
  local run_opts = { resume = flags.resume, force_order = flags["force-order"] }
  if inv.as_phase then
    -- A single phase converges on its own; it never runs preflight's "already exists" checks.
    local path, help = phase_filter(opts, flow, ctx, inv.args)
    if not path then return nil, nil, help end
    run_opts.filter = path
  else
    run_opts.skip = (inv.set["skip-phases"] and flags["skip-phases"]) or M.config_skip_phases(cfg, opts.name) or {}
    if opts.positional then opts.positional(ctx, inv.args) end
  end
  -- join/reset/upgrade: the run data (discovery and the cluster's configuration, before the flow's
  -- static check, which must see the cluster's gates); it writes nothing. `phase preflight` alone
  -- checks only this machine: no discovery, no network.
  if opts.prepare and run_opts.filter ~= "preflight" then
    run_opts.init = { run = opts.prepare, keys = opts.prepare_data, name = opts.name .. " preparation" }
  end
  return flow, ctx, run_opts
end

-- The root taken and the journal opened (unless a dry run), then the runner's run; the command's
-- closing text, or the error with the way to resume.
local function run(opts, inv, flow, ctx, run_opts)
  local cfg = inv.cfg
  -- It will run: the node's trusted tree checked, the root lock taken, a killed run's temp files removed.
  common.take_root(inv.flags, { dry_run = ctx.dry_run, cert_dir = (cfg.cluster or {}).certificatesDir,
    keys = opts.name ~= "reset" })
  run_opts.journal = not ctx.dry_run and not opts.no_journal and journal_mod.open(opts.name) or nil
  local ok, err = runner.run(flow, ctx, run_opts)
  if not ok then
    log.error(errors.message(err))
    -- A phase failed part-way through a flow: the journal knows what is done.
    if run_opts.journal and not run_opts.filter and errors.message(err):match("^error execution phase ") then
      log.line("info", ("To continue once the cause is fixed, run the same command again with --resume " ..
        "(phases done with the same inputs are skipped, this run's files are accepted): moonadm %s ... --resume")
        :format(opts.cmd or (opts.name:gsub("%-", " "))))
    end
    return errors.code(err)
  end
  -- the whole flow ran (not `... phase NAME`): the command's closing text (join's; init's is a phase)
  if opts.done and not run_opts.filter then log.result(opts.done(ctx)) end
  return 0
end

-- opts: {name = "init", flow = "init", kind = "init", desc, flags = {...}, argv, positional = fn,
-- prepare = fn(ctx) (the run data), prepare_data = {its keys}, done = fn(ctx) -> text, no_journal}.
function M.main(opts)
  local inv = parse(opts)
  local flow, ctx, run_opts = load(opts, inv)
  if not flow then
    log.result(run_opts)
    return 0
  end
  return run(opts, inv, flow, ctx, run_opts)
end

return M
