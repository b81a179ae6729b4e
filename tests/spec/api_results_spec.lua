-- No API or etcd result is dropped: a static sweep of every script for calls into the API client
-- (kube.client) and the etcd primitives (etcd.members, moonadm.etcd) whose result is thrown away
-- or whose error is not captured. The runtime half (a failure returned and never read is logged
-- at the end of the phase, and fails it under MOONADM_STRICT_RESULTS) is in api_spec.lua, against
-- a real kube-apiserver.
local helpers = require "helpers"

-- The verbs of kube.client, etcd.members and moonadm.etcd's handle that return `nil, err`.
local VERBS = {
  get = true, list = true, create = true, update = true, patch = true, apply = true, delete = true,
  create_or_update = true, get_or_create = true, watch = true, call = true, raw = true,
  add_learner = true, promote = true, remove = true, wait_for_member = true, check_health = true,
  member_list = true, member_add = true, member_promote = true, member_remove = true, status = true, health = true,
}

local function script_files()
  local p = io.popen("cd " .. helpers.q(helpers.top .. "/scripts") .. " && find . -name '*.lua' | sort")
  local out = {}
  for l in p:lines() do out[#out + 1] = l:sub(3) end
  p:close()
  return out
end

-- What precedes a call decides whether its result is kept: two or more targets (the value and the
-- error), `return` (the caller gets both), or assert( (raises the error). A lone target keeps the
-- value and drops the error; nothing at all drops both.
local function verdict(before)
  if before:match(",%s*_%s*=%s*$") then return "its error is assigned to _" end
  if before:match("[%w_.%]]%s*,%s*[%w_.%s,]*[%w_]%s*=%s*$") then return nil end
  if before:match("return%s*$") or before:match("assert%(%s*$") then return nil end
  if before:match("^%s*$") then return "its result is thrown away" end
  if before:match("=%s*$") then return "only its value is kept: the error is dropped" end
  return "it is used inside an expression: the error is dropped"
end

local function sweep(text)
  local found = {}
  local prev = ""
  local n = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    local code = line:gsub("%-%-.*$", "")
    -- a definition's header is no call (`function Members:remove(peer)`); its body on the same line is
    code = code:gsub("^%s*local%s+function%s+[%w_]+%s*%b()", ""):gsub("^%s*function%s+[%w_.:]+%s*%b()", "")
    do
      local from = 1
      while true do
        local s, e, sep, verb = code:find("[%w_%]%)]([:%.])([%w_]+)%s*[%({\"]", from)
        if not s then break end
        -- method calls of the client and etcd verbs; cluster.api's lookup (`capi.lookup(c, ref)`)
        if (sep == ":" and VERBS[verb]) or (sep == "." and verb == "lookup" and code:sub(s - 3, s) == "capi") then
          -- the receiver expression starts after the last space, `(`, `,` or `=` before it
          -- (a call in it, `M.client(ctx):check_health()`, skipped as a balanced group)
          local rs = s + 1
          while rs > 1 do
            local ch = code:sub(rs - 1, rs - 1)
            if ch == ")" then
              local depth = 0
              repeat
                rs = rs - 1
                local x = code:sub(rs, rs)
                if x == ")" then depth = depth + 1 elseif x == "(" then depth = depth - 1 end
              until depth == 0 or rs == 1
            elseif ch:match("[%w_.%[%]\"]") then
              rs = rs - 1
            else
              break
            end
          end
          local before = code:sub(1, rs - 1)
          -- a call continued from the line above (`local x, err =` then the call)
          if before:match("^%s*$") and prev:match("=%s*$") then before = prev end
          local why = verdict(before)
          if why then found[#found + 1] = { line = n, text = line, why = why, verb = verb } end
        end
        from = e + 1
      end
    end
    if code:match("%S") then prev = code end
  end
  return found
end

describe("every API and etcd result is checked", function()
  it("the sweep finds what it must (it can fail)", function()
    local f = sweep(table.concat({
      "c:patch({ kind = 'Node' }, p)",                     -- thrown away
      "local node = c:get { kind = 'Node' }",              -- error dropped
      "for _, m in ipairs(m:list() or {}) do end",         -- inside an expression
      "local node, err = c:get { kind = 'Node' }",         -- fine
      "return c:get(ref)",                                  -- fine
      "local list = assert(m:list())",                      -- fine
      "local a, b =",
      "  c:create(obj)",                                    -- fine (continued)
      "f:add(spec)",                                        -- not an API verb
      "if c then cm, err = c:get(ref) end",                 -- fine
      "M.client(ctx):check_health()",                       -- thrown away
      "local ok = M.client(ctx):check_health()",           -- error dropped
      "local cm, _ = c:get(ref)",                           -- error assigned to _
      "local function f() c:delete(ref) end",               -- thrown away inside a one-line function
      "local obj = capi.lookup(c, ref)",                    -- error dropped
      "function M:remove(name)",                            -- a definition
    }, "\n"))
    local lines = {}
    for i, x in ipairs(f) do lines[i] = x.line end
    assert.same({ 1, 2, 3, 11, 12, 13, 14, 15 }, lines)
  end)

  it("no script drops one", function()
    local bad = {}
    for _, rel in ipairs(script_files()) do
      local fh = assert(io.open(helpers.top .. "/scripts/" .. rel, "rb"))
      local text = fh:read("a")
      fh:close()
      -- the API client's own file is where results are made, not consumed
      if rel ~= "kube/client.lua" then
        for _, x in ipairs(sweep(text)) do
          bad[#bad + 1] = ("scripts/%s:%d: %s (:%s): %s"):format(rel, x.line, x.why, x.verb, x.text:gsub("^%s+", ""))
        end
      end
    end
    assert(#bad == 0, "API/etcd results dropped:\n" .. table.concat(bad, "\n"))
  end)
end)
