-- `moonadm phases init|join|reset|upgrade-apply|upgrade-node [--feature-gates ...] [--config FILE]
-- [--skip-phases ...] [--flow FILE] [--phase-add ...] [--format text|json|dot|mermaid] [--root DIR]`:
-- the resolved phase tree, in execution order, with each phase's status (run, skipped, gated by a
-- feature gate), requirements, and with --root the journal's state; checked as the runner would check it.
-- `moonadm phases check [CMD] --flow FILE [--feature-gates ...]`: the static check alone (exit 1).
local common = require "commands.common"
local config = require "config"
local flags_mod = require "flags"
local flowcmd = require "commands.flowcmd"
local graph = require "site.graph"
local log = require "log"
local runner = require "runner"
local site = require "site.load"

local M = {}

local KINDS = { init = "init", join = "join", reset = "reset", ["upgrade-apply"] = "upgrade", ["upgrade-node"] = "upgrade" }
local FORMATS = { text = true, json = true, dot = true, mermaid = true }

M.flags = common.flags(common.global, {
  { name = "feature-gates", type = "string", help = "Feature gates to resolve the flow with (key=value,...)" },
  { name = "config", type = "string", help = "A kubeadm configuration file (skipPhases, featureGates)" },
  { name = "skip-phases", type = "list", help = "List of phases to be skipped" },
  { name = "flow", type = "string", help = "A Lua file returning the flow to show instead of the stock one" },
  { name = "output", short = "o", type = "string", default = "text", help = "text or json (as --format)" },
  { name = "format", type = "string", help = "text, json, dot (Graphviz) or mermaid" },
  { name = "control-plane", type = "bool", help = "join: check the flow for a joining control plane" },
  { name = "kubelet-server", type = "string", help = "join: local or endpoint, as `moonadm join --kubelet-server`" },
}, site.flags)

local USAGE = "usage: moonadm phases init|join|reset|upgrade-apply|upgrade-node [--feature-gates ...] " ..
  "[--format text|json|dot|mermaid] [--root DIR]\n       moonadm phases check [CMD] --flow FILE [--feature-gates ...]"

-- The context the static check sees: gates, config and the flags that change requirements.
local function check_ctx(cfg, flags)
  cfg.join = cfg.join or {}
  if flags["control-plane"] or flags["kubelet-server"] then cfg.join.controlPlane = cfg.join.controlPlane or {} end
  return { gates = cfg.gates, cfg = cfg, flags = { ["kubelet-server"] = flags["kubelet-server"] }, data = {},
    gate = function(self, g) return self.gates[g] == true end }
end

function M.main(argv)
  local flags, args, set = flags_mod.parse(M.flags, argv)
  if not flags then error(args, 0) end
  common.setup(flags)
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
  site.check_trust(flags)
  -- Gates live in the ClusterConfiguration, whichever command is shown.
  local cfg, err = config.load { kind = "init", files = flags.config and { flags.config } or {},
    flags = { ["feature-gates"] = flags["feature-gates"] }, strict = false }
  if not cfg then error(err, 0) end
  for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
  local skip = flags["skip-phases"]
  if not set["skip-phases"] and flags.config then
    local kcfg = KINDS[name] ~= "init" and config.load { kind = KINDS[name], files = { flags.config } } or cfg
    skip = kcfg and flowcmd.config_skip_phases(kcfg, name) or {}
  end
  local flow = site.flow(name, flags)
  local ctx = check_ctx(cfg, flags)
  local nodes, by_path = runner.resolve(flow, ctx)
  local ok, serr = runner.select(nodes, by_path, { skip = skip or {} })
  if not ok then error(serr, 0) end
  local checked, cerr = runner.check(nodes, ctx)
  if check_only then
    if not checked then
      log.error(("flow %q is refused: %s"):format(flow.name, cerr))
      return 1
    end
    log.result(("flow %q passes the static check: every phase gets what it requires from an earlier phase"):format(flow.name))
    return 0
  end
  local journal
  if set.root then journal = require("journal").open(name) end
  local rows = graph.rows(nodes, ctx, journal)
  if format == "json" then
    log.result(graph.json(rows))
  elseif format == "dot" then
    log.result(graph.dot(rows, flow.name))
  elseif format == "mermaid" then
    log.result(graph.mermaid(rows))
  else
    log.result(graph.text(rows))
  end
  if not checked then
    log.error(("flow %q would be refused: %s"):format(name, cerr))
    return 1
  end
  return 0
end

return M
