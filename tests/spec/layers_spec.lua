-- The shape of the Lua middle layer, held: helpers never run or require a phase (only the flow
-- loader does), no require cycles, and one home for the node's identity (scripts/node/view.lua) —
-- with the regression that used to split it: a control-plane join whose localAPIEndpoint is
-- 192.0.2.7:7443 gets that address and port in its certificates, kubeconfigs and manifests alike.
local h = require "helpers"

-- A line without its comment: `--` outside a string literal (flags such as "--secure-port=" stay).
local function strip_comment(line)
  local quote
  local i = 1
  while i <= #line do
    local ch = line:sub(i, i)
    if quote then
      if ch == "\\" then i = i + 1 elseif ch == quote then quote = nil end
    elseif ch == '"' or ch == "'" then
      quote = ch
    elseif line:sub(i, i + 1) == "--" then
      return line:sub(1, i - 1)
    end
    i = i + 1
  end
  return line
end

-- Every module, by every name it is required by (scripts/a/init.lua is both `a` and `a.init`).
local function modules()
  local p = io.popen("cd " .. h.q(h.top .. "/scripts") .. " && find . -name '*.lua' | sort")
  local out = {}
  for l in p:lines() do
    local rel = l:sub(3)
    local name = rel:gsub("%.lua$", ""):gsub("/", ".")
    local f = assert(io.open(h.top .. "/scripts/" .. rel, "rb"))
    local lines = {}
    for line in (f:read("a") .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = strip_comment(line) end
    f:close()
    local m = { name = name, rel = rel, text = table.concat(lines, "\n"), names = { name } }
    if name:match("%.init$") then m.names[2] = name:gsub("%.init$", "") end
    out[#out + 1] = m
  end
  p:close()
  return out
end

local function requires(text)
  local out = {}
  for r in text:gmatch('require%s*%(?%s*"([%w_%.%-]+)"') do out[#out + 1] = r end
  return out
end

describe("the middle layer's shape", function()
  local mods = modules()
  local by = {}
  for _, m in ipairs(mods) do for _, n in ipairs(m.names) do by[n] = m end end

  it("no module requires a phase module: phases are the flows' (scripts/framework/flow.lua loads them)", function()
    local bad = {}
    for _, m in ipairs(mods) do
      for _, r in ipairs(requires(m.text)) do
        if r:match("^phases%.") then bad[#bad + 1] = ("scripts/%s requires %s"):format(m.rel, r) end
      end
    end
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("requires stand at the top of a file: only a dispatcher's computed name is required inside a function", function()
    local bad = {}
    for _, m in ipairs(mods) do
      local n = 0
      for line in (m.text .. "\n"):gmatch("(.-)\n") do
        n = n + 1
        if line:match("^%s") and (line:match('require%s*%(%s*"[^"]+"%s*%)') or line:match('require%s+"[^"]+"')) then
          bad[#bad + 1] = ("scripts/%s:%d: %s"):format(m.rel, n, line:match("^%s*(.-)%s*$"))
        end
      end
    end
    assert(#bad == 0, "a require inside a function (move it to the top of the file):\n" .. table.concat(bad, "\n"))
  end)

  it("declares every ctx.data key where it is made: a flow's preparation, a phase's data, or a per-run memo", function()
    local declared = {}
    for k in pairs(require("framework.context").CACHES) do declared[k] = "cache" end
    for _, mod in ipairs { "flows.join.data", "flows.reset.data", "flows.upgrade.data", "flows.rotate_ca.data" } do
      for _, k in ipairs(require(mod).DATA) do declared[k] = mod end
    end
    for _, m in ipairs(mods) do
      if m.rel:match("^phases/") then
        for list in m.text:gmatch("data = (%b{})") do
          for k in list:gmatch('"([%w_]+)"') do declared[k] = m.rel end
        end
      end
    end
    local bad = {}
    for _, m in ipairs(mods) do
      for k in m.text:gmatch("ctx%.data%.([%w_]+)%s*=[^=]") do
        if not declared[k] then bad[#bad + 1] = ("scripts/%s sets ctx.data.%s"):format(m.rel, k) end
      end
    end
    assert(#bad == 0, "undeclared ctx.data keys:\n" .. table.concat(bad, "\n"))
    assert.equal("phases/init/bootstrap-token.lua", declared.tokens)
  end)

  it("passes no ctx.data key nobody reads, and reads none nobody writes", function()
    local written, read = {}, {}
    for _, m in ipairs(mods) do
      for k, rest in m.text:gmatch("ctx%.data%.([%a_][%w_]*)(%s*=?=?)") do
        local set = rest:match("^%s*=$") and written or read
        set[k] = set[k] or ("scripts/" .. m.rel)
      end
    end
    local bad = {}
    for k, where in pairs(written) do
      if not read[k] then bad[#bad + 1] = ("ctx.data.%s is written (%s) and never read"):format(k, where) end
    end
    for k, where in pairs(read) do
      if not written[k] then bad[#bad + 1] = ("ctx.data.%s is read (%s) and never written"):format(k, where) end
    end
    table.sort(bad)
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  -- The packages under scripts/, bottom first: a package requires only packages below it (a
  -- package-level DAG, drawn in docs/internals.md). The dispatcher (framework/cli.lua) and the site
  -- loader reach commands and flows by computed names only, as dispatchers do.
  local LAYERS = {
    "framework",                                      -- the runner, the CLI, the journal, logs, trust
    "config", "kube",                                 -- configuration; Kubernetes text and the API client
    "node", "pki", "manifests", "cri", "kubelet",     -- this node: identity, certificates, static Pods, runtime
    "runtime", "cluster", "etcd", "endpoint",         -- the cluster: API objects, etcd members, the VIP
    "preflight", "reset", "upgrade", "renewal", "recovery", "rotation", "lab", -- what a command does with all of them
    "flows", "phases", "site", "commands",            -- flows (and their run data), phases, site scripts, commands
  }

  it("knows every folder under scripts/ as a layer", function()
    local known, bad = {}, {}
    for _, l in ipairs(LAYERS) do known[l] = true end
    local p = io.popen("cd " .. h.q(h.top .. "/scripts") .. " && find . -mindepth 1 -maxdepth 1 -type d | sort")
    for d in p:lines() do
      if not known[d:sub(3)] then bad[#bad + 1] = d:sub(3) end
    end
    p:close()
    assert(#bad == 0, "folders under scripts/ in no layer (add them to LAYERS and docs/internals.md): " .. table.concat(bad, ", "))
  end)

  it("points every require down the layers: no package-level cycle", function()
    local rank = {}
    for i, l in ipairs(LAYERS) do rank[l] = i end
    local bad = {}
    for _, m in ipairs(mods) do
      local top = m.rel:match("^([^/]+)/") or ""
      for _, r in ipairs(requires(m.text)) do
        local rtop = r:match("^([^.]+)")
        if rank[rtop] and rtop ~= top and rank[rtop] > (rank[top] or 0) then
          bad[#bad + 1] = ("scripts/%s (%s) requires %s, a layer above it"):format(m.rel, top, r)
        end
      end
    end
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("reaches no module through package.loaded (a require names every edge)", function()
    local bad = {}
    for _, m in ipairs(mods) do
      if m.text:find("package%.loaded") then bad[#bad + 1] = "scripts/" .. m.rel end
    end
    assert(#bad == 0, "package.loaded used in: " .. table.concat(bad, ", "))
  end)

  it("names modules in snake_case, and phase and flow files by their kubeadm names", function()
    local bad = {}
    for _, m in ipairs(mods) do
      if m.rel:match("^phases/") then
        if not m.rel:match("^phases/[%w-]+/[a-z][a-z-]*%.lua$") then bad[#bad + 1] = m.rel end
      elseif m.rel:match("^flows/[^/]+%.lua$") then
        if not m.rel:match("^flows/[a-z][a-z-]*%.lua$") then bad[#bad + 1] = m.rel end
      elseif not m.rel:match("^[a-z0-9_/]+%.lua$") then
        bad[#bad + 1] = m.rel
      end
    end
    assert(#bad == 0, "file names outside the convention:\n" .. table.concat(bad, "\n"))
  end)

  it("has no require cycle (at the top of a file or inside a function)", function()
    local graph = {}
    for _, m in ipairs(mods) do
      graph[m.name] = {}
      for _, r in ipairs(requires(m.text)) do
        local target = by[r]
        if target and target ~= m then graph[m.name][#graph[m.name] + 1] = target.name end
      end
    end
    local state, cycles = {}, {}
    local stack = {}
    local function visit(v)
      state[v] = "open"
      stack[#stack + 1] = v
      for _, w in ipairs(graph[v]) do
        if state[w] == "open" then
          local i = #stack
          while stack[i] ~= w do i = i - 1 end
          cycles[#cycles + 1] = table.concat(stack, " -> ", i) .. " -> " .. w
        elseif not state[w] then
          visit(w)
        end
      end
      stack[#stack] = nil
      state[v] = "done"
    end
    for _, m in ipairs(mods) do if not state[m.name] then visit(m.name) end end
    assert(#cycles == 0, "require cycles:\n" .. table.concat(cycles, "\n"))
  end)

  it("only the node view computes an advertise address", function()
    -- config/ defines and validates the field; the lab and `config print` write it into configs
    local allowed = { ["node/view.lua"] = true, ["commands/lab.lua"] = true, ["commands/config.lua"] = true }
    local bad = {}
    for _, m in ipairs(mods) do
      if not allowed[m.rel] and not m.rel:match("^config/") and not m.rel:match("^lab/") then
        if m.text:find("default_ip", 1, true) or m.text:find("%.advertiseAddress") then
          bad[#bad + 1] = "scripts/" .. m.rel
        end
      end
    end
    assert(#bad == 0, "advertise address computed outside scripts/node/view.lua:\n" .. table.concat(bad, "\n"))
  end)

  it("a control-plane join's address and port are the same in its certificates, kubeconfigs and manifests", function()
    local nodeview = require "node.view"
    local tree = require "pki.tree"
    local kubeconfig = require "pki.kubeconfigs"
    local apiserver = require "manifests.apiserver"
    -- a join's context as the runner sees it, with no InitConfiguration at all
    local ctx = { data = {}, flags = {}, gates = { ControlPlaneKubeletLocalMode = true },
      cfg = { cluster = { controlPlaneEndpoint = "192.0.2.100:6443", kubernetesVersion = "v1.35.4",
        networking = { serviceSubnet = "10.96.0.0/12", dnsDomain = "cluster.local" } },
        join = { nodeRegistration = { name = "cp2" },
          controlPlane = { localAPIEndpoint = { advertiseAddress = "192.0.2.7", bindPort = 7443 } } } } }
    function ctx:gate(g) return self.gates[g] == true end
    function ctx:read() return nil end
    assert.equal("192.0.2.7", nodeview.advertise_address(ctx))
    assert.equal(7443, nodeview.bind_port(ctx))
    assert.equal("https://192.0.2.7:7443", nodeview.local_url(ctx))
    assert.equal("cp2", nodeview.name(ctx))
    assert.equal("192.0.2.7", tree.env(ctx).advertise_address)
    assert.equal("https://192.0.2.7:7443", kubeconfig.server(tree.env(ctx), kubeconfig.by_name["controller-manager"]))
    assert.equal("https://192.0.2.100:6443", kubeconfig.server(tree.env(ctx), kubeconfig.by_name.admin))
    local cmd = table.concat(apiserver.build(ctx).spec.containers[1].command, " ")
    assert.matches("--advertise-address=192.0.2.7 ", cmd, 1, true)
    assert.matches("--secure-port=7443", cmd, 1, true)
  end)
end)
