-- The resolved flow as rows (phase, status, gate, requires, provides, journal state) and its
-- renderings for `moonadm phases CMD --format text|json|dot|mermaid`. docs/phases.md and the
-- graphs in docs/ are rendered from here (a spec keeps them current).
local lazy = require "framework.lazy"
local runner = require "framework.runner"
local util = require "framework.util"
local cjson <const> = lazy.require "cjson" -- --format json only

local M = {}

local function caps(v, ctx)
  if type(v) == "function" then
    local ok, r = pcall(v, ctx)
    v = ok and r or nil
  end
  local out = {}
  for _, c in ipairs(v or {}) do out[#out + 1] = c end
  return out
end

-- rows: runner.describe's rows plus requires, provides, and (with a journal) journal = {done, at}.
function M.rows(nodes, ctx, journal)
  local rows = runner.describe(nodes, true)
  local by = {}
  for _, n in ipairs(nodes) do by[n.path] = n end
  for _, r in ipairs(rows) do
    local n = by[r.path]
    r.requires, r.provides = caps(n.phase.requires, ctx), caps(n.phase.provides, ctx)
    r.always_run = n.phase.always_run or nil
    local w = n.phase.when
    if w then r.when = ("%s=%s"):format(w.gate, tostring(w.value == nil and true or w.value)) end
    if journal then
      local e = journal.data.phases[r.path]
      r.journal = e and { done = true, at = e.done and os.date("!%Y-%m-%dT%H:%M:%SZ", e.done) } or { done = false }
    end
  end
  return rows
end

function M.json(rows)
  local list = {}
  for _, r in ipairs(rows) do
    local o = { name = r.name, path = r.path, status = r.status, gate = r.gate, hidden = r.hidden, journal = r.journal }
    if #r.requires > 0 then o.requires = r.requires end
    if #r.provides > 0 then o.provides = r.provides end
    list[#list + 1] = o
  end
  return cjson.encode(list)
end

function M.text(rows)
  local out, width = {}, 0
  for _, r in ipairs(rows) do width = math.max(width, #r.path + 2 * r.depth) end
  local jwidth = 0
  for _, r in ipairs(rows) do
    if r.journal then r.jtext = r.journal.done and ("done " .. (r.journal.at or "")) or "-" end
    jwidth = math.max(jwidth, r.jtext and #r.jtext or 0)
  end
  for _, r in ipairs(rows) do
    local left = ("  "):rep(r.depth) .. r.path
    local note = r.status == "run" and "" or (r.status == "gated" and ("[gated: " .. r.gate .. "]") or "[skipped]")
    if r.hidden then note = (note .. " [hidden]") end
    local j = r.jtext and (("%-" .. jwidth .. "s  "):format(r.jtext)) or ""
    out[#out + 1] = util.rtrim(("%-" .. width .. "s  %s%s %s"):format(left, j, r.desc or "", note))
  end
  return table.concat(out, "\n")
end

-- Requirement edges: for each capability a running phase requires, the earliest running phase
-- before it that provides it. Returns list of {from = row, to = row, cap = name}.
local function requirement_edges(rows)
  local edges = {}
  for i, r in ipairs(rows) do
    if r.status == "run" then
      for _, cap in ipairs(r.requires) do
        for j = 1, i - 1 do
          local p = rows[j]
          local hit = false
          if p.status == "run" then
            for _, c in ipairs(p.provides) do if c == cap then hit = true end end
          end
          if hit then edges[#edges + 1] = { from = p, to = r, cap = cap } break end
        end
      end
    end
  end
  return edges
end

local function label(r)
  local l = r.path
  if r.status == "gated" then l = l .. "\n[" .. r.gate .. "]"
  elseif r.status == "skipped" then l = l .. "\n[skipped]" end
  if r.journal and r.journal.done then l = l .. "\n(journal: done)" end
  return l
end

-- Graphviz: the execution order as solid edges, requirements as dotted edges labelled with the
-- capability; gated and skipped phases dashed and grey.
function M.dot(rows, name)
  local out = { ("digraph %q {"):format(name), '  rankdir=TB;', '  node [shape=box, fontname="monospace"];',
    '  edge [fontname="monospace", fontsize=10];' }
  for i, r in ipairs(rows) do
    local attrs = { (("label=%q"):format(label(r)):gsub("\\\n", "\\n")) }
    if r.status ~= "run" then attrs[#attrs + 1] = 'style=dashed, color=grey, fontcolor=grey' end
    out[#out + 1] = ("  n%d [%s];"):format(i, table.concat(attrs, ", "))
  end
  for i = 2, #rows do out[#out + 1] = ("  n%d -> n%d;"):format(i - 1, i) end
  local idx = {}
  for i, r in ipairs(rows) do idx[r] = i end
  for _, e in ipairs(requirement_edges(rows)) do
    out[#out + 1] = ("  n%d -> n%d [style=dotted, constraint=false, label=%q];"):format(idx[e.from], idx[e.to], e.cap)
  end
  out[#out + 1] = "}"
  return table.concat(out, "\n")
end

-- Mermaid (renders on GitHub): the same picture.
function M.mermaid(rows)
  local out = { "flowchart TD" }
  for i, r in ipairs(rows) do
    local l = label(r):gsub("\n", "<br/>"):gsub('"', "'")
    out[#out + 1] = ('  n%d["%s"]%s'):format(i, l, r.status ~= "run" and ":::off" or "")
  end
  for i = 2, #rows do out[#out + 1] = ("  n%d --> n%d"):format(i - 1, i) end
  local idx = {}
  for i, r in ipairs(rows) do idx[r] = i end
  for _, e in ipairs(requirement_edges(rows)) do
    out[#out + 1] = ("  n%d -. %s .-> n%d"):format(idx[e.from], e.cap, idx[e.to])
  end
  out[#out + 1] = "  classDef off stroke-dasharray: 5 5,color:#888"
  return table.concat(out, "\n")
end

return M
