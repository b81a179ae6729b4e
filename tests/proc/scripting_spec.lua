-- Scriptability: flow files as lists, site phases (--phase-file, <scripts>/phases/site, --phase-add
-- after/before/replace, `phase NAME`), the static check alone and --force-order, --resume's report,
-- the graph formats and the journal view, the permission check on site scripts, the docs examples,
-- the Lua API reference against the binding tables, and the generated phase reference.
local cjson = require "cjson"
local h = require "helpers"
local flow_mod = require "framework.flow"
local runner = require "framework.runner"

local ctx_with, put = h.ctx_with, h.put

local function run_paths(f, gates)
  local out = {}
  for _, n in ipairs(runner.resolve(f, ctx_with(gates))) do if n.status == "run" then out[#out + 1] = n.path end end
  return out
end

local HELLO = [[
return { name = "hello", desc = "Write /hello", provides = { "greeting" },
  run = function(ctx) ctx:write("/hello", (ctx:read("/hello") or "") .. "hi from " .. ctx.phase_path .. "\n", "0644") end }
]]

describe("scripting", function()
  local root
  before_each(function()
    root = h.tmpdir()
    flow_mod.registered = {}
  end)
  after_each(function() h.rmrf(root) end)

  describe("flow files", function()
    it("accept a plain list of names and when() entries, one per line, comments free to name phases", function()
      local file = put(root .. "/join-custom.lua", [[
-- kubelet-wait-bootstrap is mentioned here but only the list counts
return {
  "preflight",
  "control-plane-prepare",
  "check-etcd",
  "kubelet-start",
  when("ControlPlaneKubeletLocalMode", "etcd-join"),
  "kubelet-wait-bootstrap",
  "control-plane-join",
  when("ControlPlaneKubeletLocalMode=false", "control-plane-join/etcd"),
  "control-plane-join/mark-control-plane",
  "control-plane-endpoint",
  "wait-control-plane",
}
]])
      local f = require("site.load").flow_file("join", file)
      package.loaded["flows.join"] = nil
      local stock = require("flows.join")
      for _, on in ipairs { true, false } do
        assert.same(run_paths(stock, { ControlPlaneKubeletLocalMode = on }), run_paths(f, { ControlPlaneKubeletLocalMode = on }))
      end
      -- when("Gate=false", ...) and when("Gate", false, ...) read the other way
      local g = flow_mod.from_list("t", { flow_mod.when("G=false", { name = "a" }), flow_mod.when("G", false, { name = "b" }),
        flow_mod.when("G", { name = "c" }) })
      assert.same({ "a", "b" }, run_paths(g, { G = false }))
      assert.same({ "c" }, run_paths(g, { G = true }))
      -- "parent/child" lines give a parent exactly those children, in the flow's order and gates
      local kids = { name = "p", children = { { name = "x" }, { name = "y" } } }
      local o = flow_mod.from_list("t", { kids, "p/y", flow_mod.when("G", "p/x") })
      assert.same({ "p", "p/y", "p/x" }, run_paths(o, { G = true }))
      assert.same({ "p", "p/y" }, run_paths(o, { G = false }))
      assert.same({ "p", "p/x", "p/y" }, run_paths(flow_mod.from_list("t", { kids }), {}))
      local bad, err = pcall(flow_mod.from_list, "t", { kids, "p/z" })
      assert.is_false(bad)
      assert.matches('entry "p/z": phase "p" has no child "z"', err, 1, true)
      bad, err = pcall(flow_mod.from_list, "t", { "q/x" })
      assert.is_false(bad)
      assert.matches('entry "q/x": no phase "q" before it', err, 1, true)
    end)

    it("still accept the flow-object form, and name the bad entry or unknown phase", function()
      local ok = pcall(require("site.load").flow_file, "init", h.top .. "/tests/spec/fixtures/flows/exit_code.lua")
      assert.is_true(ok)
      local file = put(root .. "/init-bad.lua", 'return { "preflight", "no-such-phase" }')
      local code, _, err = h.moonadm { "init", "--root", root .. "/r", "--flow", file }
      assert.equal(1, code)
      assert.matches('cannot load phase "no-such-phase": no such phase', err, 1, true)
      assert.matches("phases/site/no-such-phase.lua", err, 1, true)
      file = put(root .. "/init-bad2.lua", 'return { "preflight", 42 }')
      code, _, err = h.moonadm { "init", "--root", root .. "/r", "--flow", file }
      assert.equal(1, code)
      assert.matches("entry 2 is a number", err, 1, true)
    end)

    it("name site phases from <scripts>/phases/site and phases/<cmd> of the scripts dir", function()
      local dir = root .. "/scripts"
      os.execute("mkdir -p " .. h.q(dir .. "/phases/site") .. " " .. h.q(dir .. "/phases/init"))
      put(dir .. "/phases/site/hello.lua", HELLO)
      put(dir .. "/phases/init/extra.lua", 'return { name = "extra", run = function(ctx) ctx:write("/extra", "x", "0644") end }')
      local flow = put(root .. "/init-site.lua", 'return {\n  "hello",\n  "extra",\n}\n')
      local code, out, err = h.moonadm { "init", "--root", root .. "/r", "--scripts", dir, "--flow", flow }
      assert.equal(0, code, out .. err)
      assert.equal("hi from hello\n", h.read(root .. "/r/hello"))
      assert.equal("x", h.read(root .. "/r/extra"))
    end)
  end)

  describe("site phases", function()
    local writer = h.top .. "/tests/spec/fixtures/flows/writer.lua"
    local function order(r)
      local code, out, err = h.moonadm { "phases", "init", "--flow", writer, "--phase-file", root .. "/hello.lua",
        "--phase-add", r, "-o", "json" }
      assert.equal(0, code, out .. err)
      local paths = {}
      for _, row in ipairs(cjson.decode(out)) do paths[#paths + 1] = row.path end
      return paths
    end

    before_each(function() put(root .. "/hello.lua", HELLO) end)

    it("are inserted after, before or instead of a phase with --phase-add", function()
      assert.same({ "preflight", "hello", "write-manifest" }, order("hello:after=preflight"))
      assert.same({ "hello", "preflight", "write-manifest" }, order("hello:before=preflight"))
      assert.same({ "preflight", "hello" }, order("hello:replace=write-manifest"))
      local code, out, err = h.moonadm { "init", "--root", root .. "/r", "--flow", writer, "--phase-file", root .. "/hello.lua",
        "--phase-add", "hello:after=preflight" }
      assert.equal(0, code, out .. err)
      assert.equal("hi from hello\n", h.read(root .. "/r/hello"))
    end)

    it("go next to nested phases, keep a replaced entry's gate, and leave the stock flow untouched", function()
      flow_mod.register { name = "mine", run = function() end }
      package.loaded["flows.join"] = nil
      local stock = require("flows.join")
      local f = stock:copy():add("mine:after=control-plane-join/mark-control-plane"):add("mine:replace=etcd-join")
      local on = run_paths(f, { ControlPlaneKubeletLocalMode = true })
      assert.truthy(require("framework.util").contains(on, "control-plane-join/mine"))
      assert.truthy(require("framework.util").contains(on, "mine"))
      assert.is_nil(require("framework.util").contains(on, "etcd-join") or nil)
      assert.is_nil(require("framework.util").contains(run_paths(f, { ControlPlaneKubeletLocalMode = false }), "mine") or nil)
      -- the stock module's tables are not edited
      assert.same(run_paths(require("flows.join"), { ControlPlaneKubeletLocalMode = true }),
        run_paths(stock, { ControlPlaneKubeletLocalMode = true }))
      for _, c in ipairs(require("phases.join.control-plane-join").children) do assert.not_equal("mine", c.name) end
    end)

    it("refuse a bad --phase-add spec and an unknown anchor", function()
      local code, _, err = h.moonadm { "phases", "init", "--phase-file", root .. "/hello.lua", "--phase-add", "hello:beside=certs" }
      assert.equal(1, code)
      assert.matches("invalid --phase-add \"hello:beside=certs\": use NAME:after=PHASE", err, 1, true)
      code, _, err = h.moonadm { "phases", "init", "--phase-file", root .. "/hello.lua", "--phase-add", "hello:after=nope" }
      assert.equal(1, code)
      assert.matches('no phase "nope" to insert "hello" next to', err, 1, true)
    end)

    it("run alone with `moonadm <cmd> phase NAME`", function()
      local code, out, err = h.moonadm { "init", "phase", "hello", "--root", root .. "/r", "--phase-file", root .. "/hello.lua" }
      assert.equal(0, code, out .. err)
      assert.equal("hi from hello\n", h.read(root .. "/r/hello"))
      code, _, err = h.moonadm { "init", "phase", "nope", "--root", root .. "/r" }
      assert.equal(1, code)
      assert.matches('unknown phase "nope"', err, 1, true)
    end)

    it("get the API client factory and the logger on ctx", function()
      put(root .. "/probe.lua", [[
return { name = "probe", run = function(ctx)
  assert(type(ctx.client) == "function" and ctx.log and ctx.log.info)
  local c = ctx:client("admin")
  local ok, err = pcall(c.get, c, { apiVersion = "v1", kind = "Node", name = "x" })
  ctx.log.info("[probe] %s", tostring(err))
  ctx:write("/probe", tostring(ok) .. " " .. tostring(err), "0644")
end }
]])
      local code, out, err = h.moonadm { "init", "phase", "probe", "--dry-run", "--root", root .. "/r", "--phase-file", root .. "/probe.lua" }
      assert.equal(0, code, out .. err)
      assert.matches("--dry-run: no API call (get on the admin client) is made", out, 1, true)
    end)
  end)

  describe("the static check", function()
    local bad
    before_each(function()
      put(root .. "/needs.lua", 'return { name = "needs", requires = { "greeting" }, run = function(ctx) ctx:write("/needs", "ran", "0644") end }')
      put(root .. "/hello.lua", HELLO)
      bad = put(root .. "/init-order.lua", 'return {\n  "needs",\n  "hello",\n}\n')
    end)

    it("`phases check --flow FILE` refuses a flow naming the phase, what it requires and where it is provided", function()
      local code, _, err = h.moonadm { "phases", "check", "--flow", bad, "--phase-file", root .. "/needs.lua",
        "--phase-file", root .. "/hello.lua" }
      assert.equal(1, code)
      assert.matches('"needs" requires "greeting", which phase "hello" provides only later: move "hello" before "needs"', err, 1, true)
      local good = put(root .. "/init-good.lua", 'return {\n  "hello",\n  "needs",\n}\n')
      local out
      code, out = h.moonadm { "phases", "check", "--flow", good, "--phase-file", root .. "/needs.lua", "--phase-file", root .. "/hello.lua" }
      assert.equal(0, code)
      assert.matches("passes the static check", out, 1, true)
    end)

    it("refuses the KEP-4471-breaking join: old order with a kubelet on its own apiserver", function()
      local code, _, err = h.moonadm { "phases", "check", "join", "--feature-gates", "ControlPlaneKubeletLocalMode=false",
        "--control-plane", "--kubelet-server", "local" }
      assert.equal(1, code)
      assert.matches('"kubelet-wait-bootstrap" requires "local-etcd", which phase "control-plane-join/etcd" provides only later', err, 1, true)
      assert.equal(0, (h.moonadm { "phases", "check", "join", "--feature-gates", "ControlPlaneKubeletLocalMode=false", "--control-plane" }))
      assert.equal(0, (h.moonadm { "phases", "check", "join", "--control-plane", "--kubelet-server", "local" }))
    end)

    it("refuses before any phase runs; --force-order runs it anyway and says so loudly", function()
      local args = { "init", "--root", root .. "/r", "--flow", bad, "--phase-file", root .. "/needs.lua", "--phase-file", root .. "/hello.lua" }
      local code, _, err = h.moonadm(args)
      assert.equal(1, code)
      assert.matches("refused before any phase ran", err, 1, true)
      assert.matches("--force-order", err, 1, true)
      assert.is_nil(h.read(root .. "/r/needs"))
      args[#args + 1] = "--force-order"
      local out
      code, out, err = h.moonadm(args)
      assert.equal(0, code, out .. err)
      assert.matches("--force-order: running flow \"init\" although its static check refuses it", err, 1, true)
      assert.equal("ran", h.read(root .. "/r/needs"))
    end)
  end)

  it("every stock gate resolves both ways and each state passes the check", function()
    for _, name in ipairs(require("site.reference").FLOWS) do
      package.loaded["flows." .. name] = nil
      local f = require("flows." .. name)
      local gates = {}
      for _, n in ipairs(runner.resolve(f, ctx_with {})) do
        local w = n.phase.when
        if w then gates[w.gate] = true end
      end
      for gate in pairs(gates) do
        local on, off = run_paths(f, { [gate] = true }), run_paths(f, { [gate] = false })
        assert.are_not.same(on, off, name .. " " .. gate)
        for _, v in ipairs { true, false } do
          local ctx = ctx_with { [gate] = v }
          assert.is_true(runner.check(runner.resolve(f, ctx), ctx), ("%s %s=%s"):format(name, gate, tostring(v)))
        end
      end
    end
  end)

  describe("--resume and the journal view", function()
    local writer = h.top .. "/tests/spec/fixtures/flows/writer.lua"
    it("--resume says which phases it skipped and why, at the default verbosity", function()
      assert.equal(0, (h.moonadm { "init", "--root", root, "--flow", writer }))
      local code, out, err = h.moonadm { "init", "--root", root, "--flow", writer, "--resume" }
      assert.equal(0, code, out .. err)
      assert.matches('[resume] Running phase "preflight": it is a check, which always runs again', out, 1, true)
      assert.matches('[resume] Skipping phase "write-manifest": the journal records it done at ', out, 1, true)
      code, out = h.moonadm { "init", "--root", root, "--flow", writer, "--resume", "--pod-network-cidr", "10.244.0.0/16" }
      assert.equal(0, code)
      assert.matches('[resume] Running phase "write-manifest": its inputs changed since the journal recorded it', out, 1, true)
    end)

    it("`phases CMD --root DIR` shows the journal's state next to each phase", function()
      assert.equal(0, (h.moonadm { "init", "--root", root, "--flow", writer }))
      local code, out = h.moonadm { "phases", "init", "--root", root, "--flow", writer, "-o", "json" }
      assert.equal(0, code)
      local rows = cjson.decode(out)
      assert.is_true(rows[1].journal.done)
      code, out = h.moonadm { "phases", "init", "--root", root }
      assert.equal(0, code)
      assert.matches("preflight%s+done %d%d%d%d%-", out)
      assert.matches("certs%s+%-%s+Certificate generation", out)
    end)
  end)

  describe("phases --format", function()
    it("keeps -o json's rows and draws text, dot and mermaid with gates and requirements", function()
      local code, out = h.moonadm { "phases", "join", "-o", "json" }
      assert.equal(0, code)
      for _, r in ipairs(cjson.decode(out)) do
        assert.is_string(r.name); assert.is_string(r.path); assert.is_string(r.status)
      end
      code, out = h.moonadm { "phases", "join", "--format", "dot" }
      assert.equal(0, code)
      assert.matches('^digraph "join" {', out)
      assert.matches('label="control-plane-join/etcd\\n[ControlPlaneKubeletLocalMode=false]", style=dashed', out, 1, true)
      assert.matches('[style=dotted, constraint=false, label="kubelet-started"]', out, 1, true)
      code, out = h.moonadm { "phases", "join", "--format", "mermaid", "--feature-gates", "ControlPlaneKubeletLocalMode=false" }
      assert.equal(0, code)
      assert.matches("^flowchart TD", out)
      assert.matches('["etcd-join<br/>[ControlPlaneKubeletLocalMode=true]"]:::off', out, 1, true)
      code, out = h.moonadm { "phases", "init", "--format", "text" }
      assert.equal(0, code)
      assert.matches("certs/apiserver", out, 1, true)
      code = h.moonadm { "phases", "init", "--format", "svg" }
      assert.equal(1, code)
    end)
  end)

  describe("site scripts run as root", function()
    it("refuses a scripts dir, phase file or flow file writable by group or others, or owned by another user", function()
      local dir = root .. "/scripts"
      put(dir .. "/phases/site/hello.lua", HELLO)
      os.execute("chmod 0775 " .. h.q(dir .. "/phases"))
      local code, _, err = h.moonadm { "init", "phase", "hello", "--root", root .. "/r", "--scripts", dir }
      assert.equal(1, code)
      assert.matches("refusing the scripts dir " .. dir .. ": " .. dir .. "/phases is writable by its group (mode 0775)", err, 1, true)
      assert.matches("--insecure-scripts", err, 1, true)
      local out
      code, out, err = h.moonadm { "init", "phase", "hello", "--root", root .. "/r", "--scripts", dir, "--insecure-scripts" }
      assert.equal(0, code, out .. err)
      assert.matches("--insecure-scripts: running the scripts dir", err, 1, true)
      os.execute("chmod 0755 " .. h.q(dir .. "/phases"))

      local pf = put(root .. "/hello.lua", HELLO, "0646")
      code, _, err = h.moonadm { "init", "phase", "hello", "--root", root .. "/r", "--phase-file", pf }
      assert.equal(1, code)
      assert.matches("refusing the phase file " .. pf .. ": " .. pf .. " is writable by others (mode 0646)", err, 1, true)
      os.execute("chmod 0644 " .. h.q(pf) .. " && chown 65534 " .. h.q(pf))
      code, _, err = h.moonadm { "init", "phase", "hello", "--root", root .. "/r", "--phase-file", pf }
      assert.equal(1, code)
      assert.matches("is owned by uid 65534, neither root nor the invoking user", err, 1, true)

      local ff = put(root .. "/init-flow.lua", 'return { "preflight" }', "0664")
      code, _, err = h.moonadm { "phases", "init", "--flow", ff }
      assert.equal(1, code)
      assert.matches("refusing the flow file", err, 1, true)
      -- a directory above the file counts too (up to a sticky root-owned one such as /tmp)
      os.execute("chmod 0644 " .. h.q(ff) .. " && chmod 0777 " .. h.q(root))
      code, _, err = h.moonadm { "phases", "init", "--flow", ff }
      os.execute("chmod 0700 " .. h.q(root))
      assert.equal(1, code)
      assert.matches(root .. " is writable by others", err, 1, true)
    end)
  end)

  describe("docs/examples", function()
    local ex = h.top .. "/docs/examples/"

    it("audit-policy: the policy file, and kube-apiserver's audit flags and volumes in the manifest", function()
      local flow = put(root .. "/init-audit.lua", 'return {\n  "certs",\n  "kubeconfig",\n  "control-plane",\n}\n')
      local code, out, err = h.moonadm { "init", "--root", root .. "/r", "--flow", flow, "--phase-file", ex .. "audit-policy.lua",
        "--phase-add", "audit-policy:before=control-plane", "--apiserver-advertise-address", "192.0.2.140" }
      assert.equal(0, code, out .. err)
      local policy = require("moonadm.yaml").decode(h.read(root .. "/r/etc/kubernetes/audit/policy.yaml"))[1]
      assert.equal("Policy", policy.kind)
      local m = h.read(root .. "/r/etc/kubernetes/manifests/kube-apiserver.yaml")
      assert.matches("--audit-policy-file=/etc/kubernetes/audit/policy.yaml", m, 1, true)
      assert.matches("--audit-log-path=/var/log/kubernetes/audit/audit.log", m, 1, true)
      assert.matches("mountPath: /var/log/kubernetes/audit", m, 1, true)
      assert.matches("name: audit-policy", m, 1, true)
    end)

    it("wait-for-load-balancer: needs N answers in a row, and says what failed at the deadline", function()
      local w = dofile(ex .. "wait-for-load-balancer.lua")
      local answers, t = { true, false, true, true, true }, 0
      local i = 0
      assert.is_true(w.wait(function() i = i + 1 return answers[i], "refused" end, 3, 60, 1,
        function() return t end, function(s) t = t + s end))
      assert.equal(5, i)
      t = 0
      local ok, err = pcall(w.wait, function() return nil, "connection refused" end, 3, 5, 1,
        function() return t end, function(s) t = t + s end)
      assert.is_false(ok)
      assert.matches("did not answer /readyz 3 times in a row within 5s: last error: connection refused", err, 1, true)
      assert.equal("https://lb.example:6443", (w.endpoint { data = {}, cfg = { join = { discovery = { bootstrapToken = {
        apiServerEndpoint = "lb.example:6443" } } } } }))
      -- and it can be placed before the join's preflight
      local code, out = h.moonadm { "phases", "join", "--phase-file", ex .. "wait-for-load-balancer.lua",
        "--phase-add", "wait-for-load-balancer:before=preflight", "-o", "json" }
      assert.equal(0, code)
      assert.equal("wait-for-load-balancer", cjson.decode(out)[1].path)
    end)

    it("label-and-taint: labels and taints from node facts, patched through ctx:client", function()
      local lt = dofile(ex .. "label-and-taint.lua")
      local labels, taints = lt.policy { cpus = 4, memory_gib = 16, zone = "edge", dedicated = "gpu" }
      assert.equal("4", labels["site.example.com/cpus"])
      assert.equal("medium", labels["site.example.com/memory-class"])
      assert.equal("edge", labels["topology.kubernetes.io/zone"])
      assert.same({ { key = "site.example.com/dedicated", value = "gpu", effect = "NoSchedule" } }, taints)
      assert.same({ { key = "other", effect = "NoExecute" }, taints[1] },
        lt.merge_taints({ { key = "other", effect = "NoExecute" }, { key = "site.example.com/dedicated", value = "x", effect = "NoSchedule" } }, taints))
      -- run() against a fake API client: facts from the node file, the labeler credential, one patch
      local files = { [lt.FACTS] = "zone: edge\ndedicated: gpu\n", [lt.LABELER] = "x" }
      local patched, used
      local fake = {
        get = function() return { metadata = { name = "n1" }, spec = { taints = { { key = "k", effect = "NoSchedule" } } } } end,
        patch = function(_, ref, p, o) patched = { ref = ref, p = p, o = o } return true end,
      }
      local ctx = { cfg = { join = { nodeRegistration = { name = "n1" } } }, data = {}, log = require("framework.log"),
        journal = { data = { phases = { preflight = {}, ["kubelet-start"] = {} } } },
        read = function(_, p) return files[p] end, exists = function(_, p) return files[p] ~= nil end,
        client = function(_, which) used = which return fake end }
      lt.run(ctx)
      assert.equal(lt.LABELER, used)
      assert.equal("n1", patched.ref.name)
      assert.equal("merge", patched.o.type)
      assert.equal("gpu", patched.p.metadata.labels["site.example.com/dedicated"])
      assert.equal(2, #patched.p.spec.taints)
      assert.equal("kubelet-start,preflight", patched.p.metadata.annotations["site.example.com/phases-done-before"])
    end)
  end)

  describe("docs", function()
    it("docs/lua-api.md documents every function of every binding, and only those", function()
      local doc = assert(h.read(h.top .. "/docs/lua-api.md"))
      for _, mod in ipairs { "core", "fs", "yaml", "encoding", "pki", "api", "etcd", "proc", "net" } do
        local section = doc:match("\n## moonadm%." .. mod .. "\n(.-)\n## ") or doc:match("\n## moonadm%." .. mod .. "\n(.*)$")
        assert.is_string(section, "no section for moonadm." .. mod)
        local t = require("moonadm." .. mod)
        local documented = {}
        for name in section:gmatch("`" .. mod .. "%.([%w_]+)") do documented[name] = true end
        for name, v in pairs(t) do
          assert.is_true(documented[name] == true, ("moonadm.%s.%s (%s) is not documented in docs/lua-api.md"):format(mod, name, type(v)))
        end
        for name in pairs(documented) do
          assert.is_not_nil(t[name], ("docs/lua-api.md documents moonadm.%s.%s, which does not exist"):format(mod, name))
        end
      end
    end)

    it("docs/phases.md and docs/graphs are what the flows render today", function()
      for path, text in pairs(require("site.reference").files()) do
        local full = h.top .. "/" .. path
        if os.getenv("MOONADM_UPDATE_DOCS") == "1" then h.write(full, text) end
        assert.equal(text, h.read(full), path .. " is out of date: MOONADM_UPDATE_DOCS=1 tests/busted.sh tests/proc/scripting_spec.lua")
      end
    end)

    it("docs/scripting.md's commands name flags that exist", function()
      local doc = assert(h.read(h.top .. "/docs/scripting.md"))
      for _, flag in ipairs { "--phase-add", "--phase-file", "--flow", "--force-order", "--insecure-scripts", "--format", "--resume" } do
        assert.matches(flag, doc, 1, true)
      end
    end)
  end)
end)
