-- `moonadm phases init|join|reset|upgrade-apply|upgrade-node [--feature-gates ...] [--config FILE]
-- [--skip-phases ...] [--flow FILE] [--phase-add ...] [--format text|json|dot|mermaid] [--root DIR]`:
-- the resolved phase tree, in execution order, with each phase's status (run, skipped, gated by a
-- feature gate), requirements, and with --root the journal's state; checked as the runner would check it.
-- `moonadm phases check [CMD] --flow FILE [--feature-gates ...]`: the static check alone (exit 1).
-- A join flow serves both roles: unless --worker or --control-plane says which, it is checked for a
-- joining worker and for a joining control plane, and a refusal names the role it is for.
local lazy = require "framework.lazy"
local globals = require "framework.globals"
local config = lazy.require "config" -- with --config or --feature-gates, or when a requirement reads ctx.cfg
local config_gates = require "config.gates"
local flags_mod = require "framework.argv"
local flowcmd = lazy.require "commands.flowcmd" -- with --config
local graph = require "framework.graph"
local log = require "framework.log"
local runner = require "framework.runner"
local site = require "site.load"
local framework_journal = lazy.require "framework.journal" -- with --root

local M = {}

local KINDS = { init = "init", join = "join", reset = "reset", ["upgrade-apply"] = "upgrade", ["upgrade-node"] = "upgrade" }
local FORMATS = { text = true, json = true, dot = true, mermaid = true }

M.flags = globals.flags(globals.global, {
  { name = "feature-gates", type = "string", help = "Feature gates to resolve the flow with (key=value,...)" },
  { name = "config", type = "string", help = "A kubeadm configuration file (skipPhases, featureGates)" },
  { name = "skip-phases", type = "list", help = "List of phases to be skipped" },
  { name = "flow", type = "string", help = "A Lua file returning the flow to show instead of the stock one" },
  { name = "output", short = "o", type = "string", default = "text", help = "text or json (as --format)" },
  { name = "format", type = "string", help = "text, json, dot (Graphviz) or mermaid" },
  { name = "control-plane", type = "bool", help = "join: check the flow for a joining control plane only (default: both roles)" },
  { name = "worker", type = "bool", help = "join: check the flow for a joining worker only (default: both roles)" },
  { name = "kubelet-server", type = "string", help = "join: local or endpoint, as `moonadm join --kubelet-server`" },
}, site.flags)

-- Help data for `moonadm phases [check] --help` (scripts/framework/cli.lua renders it in cobra's shape).
M.help = {
  [""] = {
    short = "Show a command's resolved phase flow, statically checked",
    long = "Show the resolved phase tree of init, join, reset, upgrade-apply or upgrade-node in execution order,\n" ..
      "with each phase's status (run, skipped, gated by a feature gate), its requirements and, with --root,\n" ..
      "the journal's state. The flow is checked as the runner checks it: every phase's requirements must be\n" ..
      "provided by an earlier phase, or the flow is refused (exit 1).",
    example = "  # The join flow with the old join order, statically checked\n" ..
      "  moonadm phases join --feature-gates ControlPlaneKubeletLocalMode=false\n\n" ..
      "  # init's flow as a Mermaid graph\n" ..
      "  moonadm phases init --format mermaid",
    args = "init|join|reset|upgrade-apply|upgrade-node",
    flags = M.flags,
  },
  ["check"] = {
    short = "Statically check a flow file without running it",
    long = "Check a flow (a --flow FILE, or the stock flow) as the runner would before running it: every phase\n" ..
      "must get what it requires from an earlier phase. The command is guessed from the file's name when\n" ..
      "not given. A join flow serves both roles: it is checked for a joining worker and for a joining\n" ..
      "control plane unless --worker or --control-plane names one, and a refusal says which role it is for.",
    example = "  # Check a join flow for both roles (a worker and a control-plane join)\n" ..
      "  moonadm phases check --flow join-flow.lua\n\n" ..
      "  # Check it for a joining control plane only\n" ..
      "  moonadm phases check join --flow join-flow.lua --control-plane",
    args = "[init|join|reset|upgrade-apply|upgrade-node]",
    flags = M.flags,
  },
}

local USAGE = "usage: moonadm phases init|join|reset|upgrade-apply|upgrade-node [--feature-gates ...] " ..
  "[--format text|json|dot|mermaid] [--root DIR]\n       moonadm phases check [CMD] --flow FILE [--feature-gates ...]"

-- The roles a join flow is checked for: both unless a flag names one.
local ROLE_TEXT = { worker = "a worker join", ["control-plane"] = "a control-plane join" }

function M.join_roles(flags)
  local cp, worker = flags["control-plane"], flags.worker
  if cp and worker then error("--worker and --control-plane exclude each other: leave both out to check both roles", 0) end
  if worker and flags["kubelet-server"] then
    error("--kubelet-server is for a joining control plane: it cannot go with --worker", 0)
  end
  if cp or flags["kubelet-server"] then return { "control-plane" } end
  if worker then return { "worker" } end
  return { "worker", "control-plane" }
end

-- The configuration the flow is shown with, as a function that loads it once, and its gates. Without
-- --config or --feature-gates there is nothing of the user's to read: the gates are the defaults, and
-- the configuration (config's modules, most of this command's start-up) loads only if a phase's
-- requirements read it (a join's kubelet-wait-bootstrap does).
local function configuration(flags)
  local cfg
  local function get()
    if not cfg then
      local err
      -- gates live in the ClusterConfiguration, whichever command is shown
      cfg, err = config.load { kind = "init", files = flags.config and { flags.config } or {},
        flags = { ["feature-gates"] = flags["feature-gates"] }, strict = false }
      if not cfg then error(err, 0) end
      for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
    end
    return cfg
  end
  if flags.config or flags["feature-gates"] then return get, get().gates end
  return get, config_gates.effective(nil)
end

-- The context the static check sees: gates, config (read through, loaded on first use) and the flags
-- that change requirements. role: "worker" | "control-plane" for a join, nil for the other commands.
local function check_ctx(get_cfg, gates, flags, role)
  local c
  local function view()
    if not c then
      local cfg = get_cfg()
      c = {}
      for k, v in pairs(cfg) do c[k] = v end
      c.join = {}
      for k, v in pairs(cfg.join or {}) do c.join[k] = v end
      if role == "control-plane" then c.join.controlPlane = c.join.controlPlane or {}
      elseif role == "worker" then c.join.controlPlane = nil end
    end
    return c
  end
  local cfg = setmetatable({}, { __index = function(_, k) return view()[k] end,
    __pairs = function() return next, view(), nil end })
  return { gates = gates, cfg = cfg, flags = { ["kubelet-server"] = flags["kubelet-server"] }, data = {},
    gate = function(self, g) return self.gates[g] == true end }
end

-- The flow resolved and checked once per role (a join is both); the rows shown are the first
-- role's. Returns nodes, ctx, and the refusal {why, for_role = " for ..."} or nil.
local function check_roles(flow, name, flags, get_cfg, gates, skip)
  local roles = KINDS[name] == "join" and M.join_roles(flags) or { false }
  local nodes, ctx, refusals = nil, nil, {}
  for _, role in ipairs(roles) do
    local rctx = check_ctx(get_cfg, gates, flags, role or nil)
    local rnodes, by_path = runner.resolve(flow, rctx)
    local ok, serr = runner.select(rnodes, by_path, { skip = skip or {} })
    if not ok then error(serr, 0) end
    local good, why = runner.check(rnodes, rctx)
    if not nodes then nodes, ctx = rnodes, rctx end
    if not good then refusals[#refusals + 1] = { role = role, why = why } end
  end
  if #refusals == 0 then return nodes, ctx, nil, roles end
  -- A refusal names the role(s) it is for.
  local first, for_role = refusals[1], ""
  if first.role then
    local same = #refusals == #roles
    for _, r in ipairs(refusals) do same = same and r.why == first.why end
    for_role = (same and #roles > 1) and " for a worker join and for a control-plane join" or (" for " .. ROLE_TEXT[first.role])
  end
  return nodes, ctx, { why = first.why, for_role = for_role }, roles
end

-- `phases check`: the static check's verdict alone.
local function verdict(flow, refusal, roles)
  if refusal then
    log.error(("flow %q is refused%s: %s"):format(flow.name, refusal.for_role, refusal.why))
    return 1
  end
  local as = ""
  if roles[1] then
    local texts = {}
    for _, r in ipairs(roles) do texts[#texts + 1] = ROLE_TEXT[r] end
    as = " for " .. table.concat(texts, " and ")
  end
  log.result(("flow %q passes the static check%s: every phase gets what it requires from an earlier phase"):format(
    flow.name, as))
  return 0
end

local RENDER <const> = { json = graph.json, dot = graph.dot, mermaid = graph.mermaid, text = graph.text }

-- The command's words: `phases [check] COMMAND` with its format; check needs --flow.
local function command_of(flags, args)
  local check_only = args[1] == "check"
  if check_only then table.remove(args, 1) end
  local name = args[1]
  if check_only and not name then
    if not flags.flow then error("moonadm phases check needs --flow FILE (and optionally the command: check join --flow FILE)", 0) end
    name = site.guess_command(flags.flow)
    if not name then
      error(("which command's flow is %s? say it: moonadm phases check join --flow %s"):format(flags.flow, flags.flow), 0)
    end
  end
  if not name or not KINDS[name] then error(USAGE, 0) end
  local format = flags.format or flags.output
  if not FORMATS[format] then
    error(("invalid output %q: use text, json, dot or mermaid"):format(format), 0)
  end
  return name, check_only, format
end

function M.main(argv)
  local flags, args, set = flags_mod.parse(M.flags, argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  local name, check_only, format = command_of(flags, args)
  site.check_trust(flags)
  local get_cfg, gates = configuration(flags)
  local skip = flags["skip-phases"]
  if not set["skip-phases"] and flags.config then
    local kcfg = KINDS[name] ~= "init" and config.load { kind = KINDS[name], files = { flags.config } } or get_cfg()
    skip = kcfg and flowcmd.config_skip_phases(kcfg, name) or {}
  end
  local flow = site.flow(name, flags)
  local nodes, ctx, refusal, roles = check_roles(flow, name, flags, get_cfg, gates, skip)
  if check_only then return verdict(flow, refusal, roles) end
  local journal
  if set.root then journal = framework_journal.open(name) end
  local rows = graph.rows(nodes, ctx, journal)
  log.result(format == "dot" and graph.dot(rows, flow.name) or RENDER[format](rows))
  if refusal then
    log.error(("flow %q would be refused%s: %s"):format(name, refusal.for_role, refusal.why))
    return 1
  end
  return 0
end

return M
