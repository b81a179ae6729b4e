-- The moonadm binary as a user drives it: versions, embedded scripts and overrides, phase
-- subcommands, the phases listing, exit codes, the journal with --resume, --dry-run.
local cjson = require "cjson"
local h = require "helpers"

describe("moonadm CLI", function()
  local root
  before_each(function() root = h.tmpdir() end)
  after_each(function() h.rmrf(root) end)

  it("prints engine, Lua and scripts versions", function()
    local code, out = h.moonadm { "version", "-o", "json" }
    assert.equal(0, code)
    local v = cjson.decode(out).clientVersion
    assert.matches("^%d+%.%d+%.%d+$", (v.engineVersion:gsub("%+plain$", ""))) -- `make PLAIN=1` says so
    assert.equal("Lua 5.4", v.luaVersion:sub(1, 7))
    assert.equal("(embedded)", v.scriptsDir)
  end)

  -- Start-up cost is the dynamic loader's: a command loads the shared libraries it uses and no others
  -- (libcurl on the first request, lua-cjson for JSON output). The loader itself lists what it opened.
  it("loads libcurl and lua-cjson only for the commands that use them", function()
    local function opened(args)
      local code, out, err = h.moonadm(args, { LD_DEBUG = "files" })
      assert.equal(0, code, out .. err)
      assert.truthy(err:find("file=", 1, true), "LD_DEBUG=files printed nothing: " .. err:sub(1, 200))
      return { curl = err:find("libcurl", 1, true) ~= nil, cjson = err:find("cjson", 1, true) ~= nil }
    end
    assert.same({ curl = false, cjson = false }, opened { "version" })
    assert.same({ curl = false, cjson = false }, opened { "config", "print", "init-defaults" })
    assert.same({ curl = false, cjson = false }, opened { "phases", "init" })
    assert.same({ curl = false, cjson = true }, opened { "version", "-o", "json" })
  end)

  it("exports the stock scripts, and an edited exported phase is what runs", function()
    local dir = root .. "/scripts"
    local code, out = h.moonadm { "scripts", "export", dir }
    assert.equal(0, code, out)
    local file = dir .. "/phases/init/show-join-command.lua"
    local src = h.read(file)
    assert.truthy(src and src:find('name = "show-join-command"', 1, true))
    -- edit the phase: whatever its stock body, it now writes a marker file
    local edited = src:gsub("\nreturn {", "\nlocal stock = {", 1) ..
      '\nstock.run = function(ctx) ctx:write("/edited", "yes", "0644") end\nreturn stock\n'
    h.write(file, edited)
    code, out = h.moonadm { "init", "phase", "show-join-command", "--root", root, "--scripts", dir }
    assert.equal(0, code, out)
    assert.equal("yes", h.read(root .. "/edited"))
    -- MOONADM_SCRIPTS does the same
    os.remove(root .. "/edited")
    code = h.moonadm({ "init", "phase", "show-join-command", "--root", root }, { MOONADM_SCRIPTS = dir })
    assert.equal(0, code)
    assert.equal("yes", h.read(root .. "/edited"))
    -- a second export refuses to overwrite the edit
    code, _, err = h.moonadm { "scripts", "export", dir }
    assert.equal(1, code)
    assert.matches("differs from the stock copy", err, 1, true)
  end)

  it("refuses scripts written for another engine version, with a clear message", function()
    local dir = root .. "/scripts"
    h.write(dir .. "/framework/version.lua", 'return { scripts = "9.0.0", engine = "9.9", kubernetes = "v1.35.4" }')
    local code, _, err = h.moonadm { "version", "--scripts", dir }
    assert.equal(1, code)
    assert.matches("need engine 9.9, but this binary's engine is", err, 1, true)
  end)

  it("refuses a scripts dir others can write before loading anything from it", function()
    local dir = root .. "/open-scripts"
    h.write(dir .. "/framework/version.lua", 'error("this must never run")')
    os.execute("chmod 0777 " .. h.q(dir))
    local code, _, err = h.moonadm { "version", "--scripts", dir }
    assert.equal(1, code)
    assert.matches("refusing the scripts dir " .. dir .. ": " .. dir .. " is writable by others (mode 0777)", err, 1, true)
    assert.is_nil(err:find("this must never run", 1, true))
    assert.is_nil(err:find("stack traceback", 1, true))
  end)

  it("exits with the code a phase's error carries", function()
    local code, _, err = h.moonadm { "init", "--root", root, "--flow", h.top .. "/tests/spec/fixtures/flows/exit_code.lua" }
    assert.equal(3, code)
    assert.matches("error execution phase coded: a site check failed", err, 1, true)
  end)

  it("rejects an unknown phase in --skip-phases and an unknown flag", function()
    local code, _, err = h.moonadm { "init", "--root", root, "--skip-phases", "certs/nope" }
    assert.equal(1, code)
    assert.matches("invalid phase name: certs/nope", err, 1, true)
    code, _, err = h.moonadm { "init", "--root", root, "--bogus" }
    assert.equal(1, code)
    assert.matches("unknown flag: --bogus", err, 1, true)
  end)

  it("honours skipPhases from the config file unless --skip-phases is given", function()
    local cfg = root .. "/kubeadm.yaml"
    h.write(cfg, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nskipPhases:\n- addon/kube-proxy\n")
    local code, out = h.moonadm { "phases", "init", "--config", cfg, "-o", "json" }
    assert.equal(0, code)
    local status = {}
    for _, r in ipairs(cjson.decode(out)) do status[r.path] = r.status end
    assert.equal("skipped", status["addon/kube-proxy"])
    assert.equal("run", status["addon/coredns"])
  end)

  it("lists each flow with statuses and gates as JSON", function()
    local code, out = h.moonadm { "phases", "join", "--feature-gates", "ControlPlaneKubeletLocalMode=false", "-o", "json" }
    assert.equal(0, code)
    local rows = cjson.decode(out)
    local by = {}
    for i, r in ipairs(rows) do by[r.path] = r; r.i = i end
    assert.equal("gated", by["etcd-join"].status)
    assert.equal("ControlPlaneKubeletLocalMode=true", by["etcd-join"].gate)
    assert.equal("run", by["control-plane-join/etcd"].status)
    code, out = h.moonadm { "phases", "join", "-o", "json" }
    by = {}
    for i, r in ipairs(cjson.decode(out)) do by[r.path] = r; r.i = i end
    assert.equal("run", by["etcd-join"].status)
    assert.equal("gated", by["control-plane-join/etcd"].status)
    assert.is_true(by["kubelet-start"].i < by["etcd-join"].i and by["etcd-join"].i < by["kubelet-wait-bootstrap"].i
      and by["kubelet-wait-bootstrap"].i < by["control-plane-join"].i)
    for _, flow in ipairs { "init", "reset", "upgrade-apply", "upgrade-node" } do
      code = h.moonadm { "phases", flow }
      assert.equal(0, code, flow)
    end
  end)

  it("rejects removed and unknown feature gates", function()
    local code, _, err = h.moonadm { "phases", "init", "--feature-gates", "EtcdLearnerMode=true" }
    assert.equal(1, code)
    assert.matches("EtcdLearnerMode", err, 1, true)
    code, _, err = h.moonadm { "phases", "init", "--feature-gates", "NoSuchGate=true" }
    assert.equal(1, code)
    assert.matches("NoSuchGate", err, 1, true)
  end)

  describe("journal and --resume", function()
    local flow = h.top .. "/tests/spec/fixtures/flows/writer.lua"

    it("a plain re-run fails preflight as kubeadm's does and names --resume; --resume converges", function()
      local code, out, err = h.moonadm { "init", "--root", root, "--flow", flow }
      assert.equal(0, code, out .. err)
      assert.equal("1", h.read(root .. "/runs"))

      code, _, err = h.moonadm { "init", "--root", root, "--flow", flow }
      assert.equal(1, code)
      assert.matches("[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]", err, 1, true)
      assert.matches("--resume", err, 1, true)
      assert.equal("1", h.read(root .. "/runs"))

      code, out, err = h.moonadm { "init", "--root", root, "--flow", flow, "--resume" }
      assert.equal(0, code, out .. err)
      assert.equal("1", h.read(root .. "/runs"), "a phase done with the same inputs is skipped")

      code, out, err = h.moonadm { "init", "--root", root, "--flow", flow, "--resume", "--pod-network-cidr", "10.244.0.0/16" }
      assert.equal(0, code, out .. err)
      assert.equal("2", h.read(root .. "/runs"), "changed inputs run the phase again")
      assert.matches("10.244.0.0/16", h.read(root .. "/etc/kubernetes/manifests/kube-apiserver.yaml"), 1, true)
    end)

    it("--resume re-runs a phase that crashed before it was recorded, accepting the files it had written", function()
      local code = h.moonadm({ "init", "--root", root, "--flow", flow }, { CRASH_AFTER_WRITE = "1" })
      assert.equal(9, code)
      -- a plain re-run refuses the half-done node
      code = h.moonadm { "init", "--root", root, "--flow", flow }
      assert.equal(1, code)
      -- every file is journaled as it is written, so --resume knows the crashed phase's manifest is ours
      code = h.moonadm { "init", "--root", root, "--flow", flow, "--resume" }
      assert.equal(0, code)
      assert.equal("2", h.read(root .. "/runs"), "the crashed phase ran again")
      code = h.moonadm { "init", "--root", root, "--flow", flow, "--resume" }
      assert.equal(0, code)
      assert.equal("2", h.read(root .. "/runs"), "and is now recorded as done")
    end)

    it("a user who skips preflight's producer still gets the check refused for unknown files", function()
      h.write(root .. "/etc/kubernetes/manifests/etcd.yaml", "not ours")
      local code, _, err = h.moonadm { "init", "--root", root, "--flow", flow, "--resume" }
      assert.equal(1, code)
      assert.matches("FileAvailable--etc-kubernetes-manifests-etcd.yaml", err, 1, true)
    end)
  end)

  it("--dry-run writes nothing under the root and prints each intended write", function()
    local flow = h.top .. "/tests/spec/fixtures/flows/writer.lua"
    local code, out, err = h.moonadm { "init", "--root", root, "--flow", flow, "--dry-run" }
    assert.equal(0, code, out .. err)
    assert.matches('[dryrun] Would write file "/etc/kubernetes/manifests/kube-apiserver.yaml"', out, 1, true)
    local p = io.popen("find " .. h.q(root) .. " -mindepth 1 | wc -l")
    assert.equal("0", p:read("l"))
    p:close()
  end)

  it("emits a JSON event stream with --output json", function()
    local flow = h.top .. "/tests/spec/fixtures/flows/writer.lua"
    local code, out = h.moonadm { "init", "--root", root, "--flow", flow, "--output", "json" }
    assert.equal(0, code)
    local types = {}
    for line in out:gmatch("[^\n]+") do
      local ev = cjson.decode(line)
      types[#types + 1] = ev.type .. (ev.phase and (":" .. ev.phase) or "")
      if ev.type == "phase-end" then assert.is_number(ev.duration) end
    end
    assert.truthy(require("framework.util").contains(types, "phase-start:write-manifest"))
    assert.truthy(require("framework.util").contains(types, "phase-end:write-manifest"))
  end)
end)
