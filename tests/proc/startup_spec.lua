-- Start-up loads what a command uses (issue 19): the commands that need no server and write no
-- file list or print without loading the domain modules (PKI, cluster, etcd, lab), the HTTP
-- client, cjson, or a module reached through a lazy proxy but never called (config.print, read as
-- a field when config loaded, was one). Checked by running the real binary's CLI and listing
-- package.loaded after it.
local h = require "helpers"

describe("start-up", function()
  local dir, script
  setup(function()
    dir = h.tmpdir()
    script = dir .. "/loaded.lua"
    h.write(script, [[
local cli = require "framework.cli"
local ok, err = pcall(cli.main, { table.unpack(arg) })
local names = {}
for k in pairs(package.loaded) do names[#names + 1] = k end
table.sort(names)
local out = assert(io.open(os.getenv("LOADED_OUT"), "w"))
out:write(ok and "ok" or ("error: " .. tostring(err)), "\n", table.concat(names, "\n"), "\n")
out:close()
]])
  end)
  teardown(function() h.rmrf(dir) end)

  local function loaded(args)
    local argv = { "lua", script }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    local code, _, err = h.moonadm(argv, { LOADED_OUT = dir .. "/loaded.txt" })
    assert.equal(0, code, err)
    local out = h.read(dir .. "/loaded.txt")
    local status, list = out:match("^([^\n]*)\n(.*)$")
    assert.equal("ok", status, out)
    local set = {}
    for name in list:gmatch("[^\n]+") do set[name] = true end
    return set
  end

  local NEVER = { "^pki%.", "^cluster%.", "^etcd%.", "^lab%.", "^upgrade%.", "^kubelet%.", "^manifests%.",
    "^moonadm%.api$", "^moonadm%.etcd$", "^cjson", "^luv$", "^config%.print$" }
  -- kubelet-wait-bootstrap's requirements depend on the join (cluster.kubelet_bootstrap's local_server and
  -- local_etcd): the module is read, its own dependencies are not.
  local ALLOWED = { ["cluster.kubelet_bootstrap"] = true }

  for _, args in ipairs { { "version" }, { "phases", "init" }, { "phases", "join" }, { "phases", "reset" },
    { "phases", "upgrade-apply" }, { "phases", "upgrade-node" }, { "config", "print", "init-defaults" } } do
    it(table.concat(args, " ") .. " loads no domain module, no HTTP client, no unused config module", function()
      local set = loaded(args)
      assert.truthy(set["framework.cli"]) -- the listing works
      for name in pairs(set) do
        for _, pat in ipairs(NEVER) do
          if not ALLOWED[name] and not (pat == "^config%.print$" and args[1] == "config") then
            assert.is_nil(name:match(pat) and name or nil, table.concat(args, " ") .. " loaded " .. name)
          end
        end
      end
    end)
  end

  -- what only some runs need: the site-script trust check (site files given), the journal (--root),
  -- the help text (--help or a usage error), the suggestions of a config error
  it("phases init loads neither the trust check, the journal, the help text nor config suggestions", function()
    local set = loaded { "phases", "init" }
    for _, name in ipairs { "framework.trust", "framework.journal", "framework.help", "config.suggest" } do
      assert.is_nil(set[name] and name or nil, "phases init loaded " .. name)
    end
    assert.truthy(loaded { "phases", "init", "--help" }["framework.help"])
  end)

  -- what a run needs and a listing does not: the runner (version), the run context and the PKI
  -- binding it brings, the flow commands' helpers (phases without --config)
  it("version loads no runner; phases init no run context, no PKI binding, no flow command helpers", function()
    local v = loaded { "version" }
    for _, name in ipairs { "framework.runner", "framework.context", "moonadm.pki" } do
      assert.is_nil(v[name] and name or nil, "version loaded " .. name)
    end
    local p = loaded { "phases", "init" }
    assert.truthy(p["framework.runner"]) -- the listing resolves the flow with it
    for _, name in ipairs { "framework.context", "moonadm.pki", "commands.flowcmd" } do
      assert.is_nil(p[name] and name or nil, "phases init loaded " .. name)
    end
  end)

  -- commands/phases.lua: with nothing of the user's to read, the flow resolves with the default gates
  -- and the configuration loads only when a requirement reads it
  it("phases init, reset and upgrade-apply load no configuration but the gates; --feature-gates loads it", function()
    for _, cmd in ipairs { "init", "reset", "upgrade-apply" } do
      local set = loaded { "phases", cmd }
      assert.truthy(set["config.gates"])
      for _, name in ipairs { "config", "config.load", "config.schema", "config.validate", "config.defaults" } do
        assert.is_nil(set[name] and name or nil, "phases " .. cmd .. " loaded " .. name)
      end
    end
    assert.truthy(loaded { "phases", "init", "--feature-gates", "NodeLocalCRISocket=false" }["config.load"])
    assert.truthy(loaded { "phases", "join" }["config.load"]) -- kubelet-wait-bootstrap's requirements read it
    local code, _, err = h.moonadm { "phases", "init", "--feature-gates", "NoSuchGate=true" }
    assert.equal(1, code)
    assert.matches("NoSuchGate", err, 1, true)
  end)

  it("the default gates phases resolves with are the ones config.load gives a config with none set", function()
    local cfg = assert(require("config").load { kind = "init", files = {}, flags = {}, strict = false,
      no_host_defaults = true })
    assert.same(cfg.gates, require("config.gates").effective(nil))
  end)

  it("config print init-defaults does not load the validation (config_spec validates what it prints)", function()
    local set = loaded { "config", "print", "init-defaults" }
    for _, name in ipairs { "config.validate", "config.checks" } do
      assert.is_nil(set[name] and name or nil, "config print init-defaults loaded " .. name)
    end
    h.write(dir .. "/cfg.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n")
    assert.truthy(loaded { "config", "validate", "--config", dir .. "/cfg.yaml" }["config.validate"])
  end)

  it("config print init-defaults loads config.print (the listing sees a lazy module once used)", function()
    assert.truthy(loaded { "config", "print", "init-defaults" }["config.print"])
  end)
end)
