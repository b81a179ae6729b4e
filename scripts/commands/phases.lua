-- `moonadm phases init|join|reset|upgrade-apply|upgrade-node [--feature-gates ...] [--config FILE]
-- [--skip-phases ...] [-o text|json]`: the resolved phase tree, in execution order, with each
-- phase's status (run, skipped, gated by a feature gate), checked as the runner would check it.
local cjson = require "cjson"
local common = require "commands.common"
local config = require "config"
local flags_mod = require "flags"
local flowcmd = require "commands.flowcmd"
local log = require "log"
local runner = require "runner"

local M = {}

local KINDS = { init = "init", join = "join", reset = "reset", ["upgrade-apply"] = "upgrade", ["upgrade-node"] = "upgrade" }

M.flags = common.flags(common.global, {
  { name = "feature-gates", type = "string", help = "Feature gates to resolve the flow with (key=value,...)" },
  { name = "config", type = "string", help = "A kubeadm configuration file (skipPhases, featureGates)" },
  { name = "skip-phases", type = "list", help = "List of phases to be skipped" },
  { name = "flow", type = "string", help = "A Lua file returning the flow to show instead of the stock one" },
  { name = "output", short = "o", type = "string", default = "text", help = "text or json" },
})

function M.main(argv)
  local flags, args, set = flags_mod.parse(M.flags, argv)
  if not flags then error(args, 0) end
  common.setup(flags)
  local name = args[1]
  if not name or not KINDS[name] then
    error("usage: moonadm phases init|join|reset|upgrade-apply|upgrade-node [--feature-gates ...] [-o text|json]", 0)
  end
  if flags.output ~= "text" and flags.output ~= "json" then
    error(("invalid output %q: use text or json"):format(flags.output), 0)
  end
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
  local flow = flowcmd.load_flow(name, flags.flow)
  local ctx = { gates = cfg.gates, cfg = cfg, gate = function(self, g) return self.gates[g] == true end }
  local nodes, by_path = runner.resolve(flow, ctx)
  local ok, serr = runner.select(nodes, by_path, { skip = skip or {} })
  if not ok then error(serr, 0) end
  local checked, cerr = runner.check(nodes, ctx)
  local rows = runner.describe(nodes, true)
  if flags.output == "json" then
    local list = {}
    for _, r in ipairs(rows) do
      list[#list + 1] = { name = r.name, path = r.path, status = r.status, gate = r.gate, hidden = r.hidden }
    end
    log.result(cjson.encode(list))
  else
    local out, width = {}, 0
    for _, r in ipairs(rows) do width = math.max(width, #r.path + 2 * r.depth) end
    for _, r in ipairs(rows) do
      local left = ("  "):rep(r.depth) .. r.path
      local note = r.status == "run" and "" or (r.status == "gated" and ("[gated: " .. r.gate .. "]") or "[skipped]")
      if r.hidden then note = (note .. " [hidden]") end
      out[#out + 1] = (("%-" .. width .. "s  %s %s"):format(left, r.desc or "", note)):gsub("%s+$", "")
    end
    log.result(table.concat(out, "\n"))
  end
  if not checked then
    log.error(("flow %q would be refused: %s"):format(name, cerr))
    return 1
  end
  return 0
end

return M
