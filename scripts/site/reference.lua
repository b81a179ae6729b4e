-- docs/phases.md (the phase reference of every stock flow) and docs/graphs/*.dot, rendered from
-- the flows themselves. tests/proc/scripting_spec.lua keeps the committed copies current
-- (MOONADM_UPDATE_DOCS=1 rewrites them).
local core = require "moonadm.core"
local graph = require "framework.graph"
local runner = require "framework.runner"
local config_gates = require "config.gates"

local M = {}

M.FLOWS = { "init", "join", "reset", "upgrade-apply", "upgrade-node", "rotate-ca" }
M.COMMAND = { init = "moonadm init", join = "moonadm join", reset = "moonadm reset",
  ["upgrade-apply"] = "moonadm upgrade apply", ["upgrade-node"] = "moonadm upgrade node",
  ["rotate-ca"] = "moonadm certs rotate-ca" }

local function ctx_for(gates)
  return { gates = gates, cfg = { join = {}, cluster = {} }, flags = {}, data = {},
    gate = function(self, g) return self.gates[g] == true end }
end

-- The stock gate defaults (kubeadm v1.35): ControlPlaneKubeletLocalMode and NodeLocalCRISocket on.
M.DEFAULT_GATES = config_gates.effective(nil)

function M.rows(name, gates)
  local flow = require("flows." .. name)
  local ctx = ctx_for(gates or M.DEFAULT_GATES)
  local nodes = runner.resolve(flow, ctx)
  return graph.rows(nodes, ctx), flow
end

local function cell(s) return (tostring(s or ""):gsub("|", "\\|")) end

-- Where a row's logic lives: its phase file (a child sits in its parent's) and the domain modules
-- that file requires, read from the embedded sources.
local sources
local function file_cell(dir, path)
  if not sources then
    sources = {}
    for _, s in ipairs(core.scripts()) do sources[s.path] = s.source end
  end
  local rel = ("phases/%s/%s.lua"):format(dir, path:match("^[^/]+"))
  local src = sources[rel]
  if not src then return "" end
  local mods, seen = {}, {}
  for m in src:gmatch('require%s*%(?%s*"([%w_%.]+)"') do
    if not (m:match("^framework%.") or m:match("^moonadm%.") or seen[m]) then
      seen[m] = true
      mods[#mods + 1] = "`" .. m .. "`"
    end
  end
  return "`" .. rel .. "`" .. (#mods > 0 and (" → " .. table.concat(mods, ", ")) or "")
end

function M.markdown()
  local out = { "# Phase reference",
    "",
    "Generated from `scripts/flows/*.lua` and the phase tables by `scripts/site/reference.lua`;",
    "`tests/proc/scripting_spec.lua` fails when this file is out of date (`MOONADM_UPDATE_DOCS=1",
    "tests/busted.sh tests/proc/scripting_spec.lua` rewrites it). Gates are resolved with kubeadm v1.35's",
    "defaults; a gated row runs only when its gate has the value shown. *requires* must be provided",
    "by an earlier phase or the flow is refused before anything runs (docs/scripting.md). Every phase",
    "can run alone as `<command> phase <path>` (a parent with `all` for its subtree), except hidden ones.",
    "" }
  for _, name in ipairs(M.FLOWS) do
    local rows, flow = M.rows(name)
    out[#out + 1] = ("## %s"):format(M.COMMAND[name])
    out[#out + 1] = ""
    out[#out + 1] = "| phase | description | gate | requires | provides | file → logic |"
    out[#out + 1] = "|---|---|---|---|---|---|"
    for _, r in ipairs(rows) do
      -- a row gated by its own `when` shows the gate it needs, even when the default satisfies it
      local gate = r.when or (r.status == "gated" and r.gate) or ""
      local flags = {}
      if r.hidden then flags[#flags + 1] = "hidden" end
      if r.always_run then flags[#flags + 1] = "runs again under --resume" end
      local desc = cell(r.desc) .. (#flags > 0 and (" *(" .. table.concat(flags, "; ") .. ")*") or "")
      out[#out + 1] = ("| `%s` | %s | %s | %s | %s | %s |"):format(r.path, desc, cell(gate),
        cell(table.concat(r.requires, ", ")), cell(table.concat(r.provides, ", ")), file_cell(flow.dir, r.path))
    end
    out[#out + 1] = ""
  end
  -- the gated rows of join in the other gate state, so both orders are on the page
  out[#out + 1] = "## Graphs"
  out[#out + 1] = ""
  out[#out + 1] = "Solid arrows: execution order. Dotted arrows: a capability one phase provides and a later one"
  out[#out + 1] = "requires. Dashed boxes: gated off with the gates shown. Rendered by `moonadm phases CMD --format mermaid`"
  out[#out + 1] = "(Graphviz: `--format dot`, committed as docs/graphs/*.dot)."
  out[#out + 1] = ""
  for _, g in ipairs(M.graphs()) do
    out[#out + 1] = ("### %s"):format(g.title)
    out[#out + 1] = ""
    out[#out + 1] = "```mermaid"
    out[#out + 1] = graph.mermaid(g.rows)
    out[#out + 1] = "```"
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

function M.graphs()
  local old = {}
  for k, v in pairs(M.DEFAULT_GATES) do old[k] = v end
  old.ControlPlaneKubeletLocalMode = false
  return {
    { file = "init", title = "init", rows = (M.rows("init")) },
    { file = "join", title = "join (stock order, KEP-4471)", rows = (M.rows("join")) },
    { file = "join-old-order", title = "join with ControlPlaneKubeletLocalMode=false (moonadm's experiment: the old order)",
      rows = (M.rows("join", old)) },
  }
end

-- {path -> content} of every generated file, relative to the repository.
function M.files()
  local files = { ["docs/phases.md"] = M.markdown() }
  for _, g in ipairs(M.graphs()) do
    files["docs/graphs/" .. g.file .. ".dot"] = graph.dot(g.rows, g.file) .. "\n"
  end
  return files
end

return M
