-- Issue 46, defect 3: the YAML budgets counted nodes, not bytes. One 2 MiB scalar aliased 5 000
-- times (a 2.1 MB file of 5 000 nodes, within yaml.v2's alias ratio) took ~10 GB, on every path
-- that decodes: --config, an 803 KB signed cluster-info (read before the CA pin is checked),
-- --discovery-file, --kubeconfig, and kubeadm-config as upgrade reads it. (Go's yaml.v2 shares
-- the string: kubeadm was not affected.) The decoder now charges the bytes of every scalar it
-- makes, an alias's before it copies it, against yaml.limits.max_scalar_bytes (128 MiB), and the
-- Lua side makes each string once. Each path runs in a child held to 1 GiB of address space: it
-- must exit with the decoder's message, not run out of memory (before the fix: "out of memory
-- decoding YAML" after 7 to 28 s and 4 GB under a 4 GiB limit).
local h = require "helpers"
local yaml = require "moonadm.yaml"
local net = require "moonadm.net"
local core = require "moonadm.core"

local WHAT = "document contains excessive aliasing: the alias *a would copy "

-- head, 200 plain nodes (so the alias ratio holds), a scalar of `size` bytes aliased `n` times, tail
local function bomb(head, size, n, tail)
  return ("%s\nc: [%s1]\na: &a %s\nb: [%s*a]\n%s"):format(head, ("1,"):rep(199), ("x"):rep(size), ("*a,"):rep(n - 1),
    tail or "")
end
local CONFIG = bomb("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration", 2 * 1024 * 1024, 5000)
local KUBECONFIG_TAIL = "clusters:\n- cluster:\n    server: https://192.0.2.1:6443\n    certificate-authority-data: eA==\n" ..
  "  name: k\ncontexts:\n- context: {cluster: k, user: u}\n  name: c\ncurrent-context: c\nusers:\n- name: u\n  user: {token: t}\n"
local KUBECONFIG = bomb("apiVersion: v1\nkind: Config", 2 * 1024 * 1024, 5000, KUBECONFIG_TAIL)
-- what the refusal says for a 2 MiB scalar: the anchor and 62 copies fit in 128 MiB, the 63rd alias does not
local AT_2MIB = ":5:191: " .. WHAT .. "2097152 bytes of text, past the 134217728 bytes (128 MiB) of scalars"

-- Runs a shell command line with the address space held to 1 GiB; returns how it ended ("exit" or
-- "signal"), its code, its output and the seconds it took.
local function limited(cmdline)
  local out = os.tmpname()
  local t0 = core.monotonic()
  -- (not under ASan, whose shadow memory alone is terabytes of address space: the refusal is checked, the bound not)
  local limit = os.getenv("ASAN_OPTIONS") and "" or "ulimit -v 1048576 && "
  local _, how, code = os.execute(limit .. cmdline .. " >" .. out .. " 2>&1")
  local secs = core.monotonic() - t0
  local text = h.read(out)
  os.remove(out)
  return how, code, text, secs
end

local function moonadm_limited(args)
  local parts = { h.q(h.bin) }
  for _, a in ipairs(args) do parts[#parts + 1] = h.q(a) end
  return limited(table.concat(parts, " "))
end

-- refused with `want` (a plain substring), at once, within the memory it was given
local function assert_refused(want, how, code, text, secs)
  assert.equal("exit", how, text)
  assert.equal(1, code, text)
  assert.matches(want, text, 1, true)
  assert.not_matches("out of memory", text, 1, true)
  assert.is_true(secs < 10, ("%.1f s"):format(secs))
end

describe("regress 050: YAML aliases charged by the bytes they copy", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmrf(dir) end)

  it("the issue's file is 2.1 MB and within the alias ratio; the budget is yaml.limits.max_scalar_bytes", function()
    assert.is_true(#CONFIG < 2.2e6, #CONFIG)
    assert.equal(128 * 1024 * 1024, yaml.limits.max_scalar_bytes)
    local docs, err = yaml.decode(CONFIG, "b.yaml")
    assert.is_nil(docs)
    assert.equal("b.yaml" .. AT_2MIB, err:sub(1, #AT_2MIB + 6))
  end)

  it("--config: refused with the file and line, in bounded memory", function()
    h.write(dir .. "/b.yaml", CONFIG)
    assert_refused("b.yaml" .. AT_2MIB,
      moonadm_limited { "init", "phase", "certs", "ca", "--config", dir .. "/b.yaml", "--root", dir .. "/root" })
  end)

  it("--kubeconfig and the admin.conf under --root: refused, in bounded memory", function()
    h.write(dir .. "/kc.conf", KUBECONFIG)
    assert_refused("kc.conf" .. AT_2MIB, moonadm_limited { "token", "list", "--kubeconfig", dir .. "/kc.conf" })
    h.write(dir .. "/root/etc/kubernetes/admin.conf", KUBECONFIG)
    assert_refused("admin.conf" .. AT_2MIB, moonadm_limited { "upgrade", "plan", "--root", dir .. "/root" })
  end)

  it("--discovery-file: refused as discovery's error, in bounded memory", function()
    h.write(dir .. "/kc.conf", KUBECONFIG)
    assert_refused("[discovery] " .. dir .. "/kc.conf" .. AT_2MIB, moonadm_limited { "join", "--discovery-file",
      dir .. "/kc.conf", "--root", dir .. "/root", "--ignore-preflight-errors", "all" })
  end)

  it("an 803 KB signed cluster-info, before the CA pin is checked: refused, in bounded memory", function()
    -- served by `openssl s_server -WWW` from a file named as the ConfigMap's path
    local www = dir .. "/www/api/v1/namespaces/kube-public/configmaps"
    h.write(dir .. "/mk.lua", [[
      local pki, json = require "moonadm.pki", require "kube.json"
      local from, to = ...
      local f = assert(io.open(from, "rb"))
      local content = f:read("a")
      f:close()
      local cm = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "cluster-info", namespace = "kube-public" },
        data = { kubeconfig = content, ["jws-kubeconfig-abcdef"] = pki.jws_sign(content, "abcdef", "0123456789abcdef") } }
      f = assert(io.open(to, "wb"))
      f:write(json.encode(cm))
      f:close()
    ]])
    h.write(dir .. "/content", bomb("apiVersion: v1\nkind: Config", 768 * 1024, 5000, KUBECONFIG_TAIL))
    os.execute("mkdir -p " .. h.q(www))
    assert(os.execute(("%s lua %s %s %s"):format(h.q(h.bin), h.q(dir .. "/mk.lua"), h.q(dir .. "/content"),
      h.q(www .. "/cluster-info"))))
    local size = #h.read(www .. "/cluster-info")
    assert.is_true(size > 780 * 1024 and size < 1024 * 1024, size) -- under discovery's 1 MiB cap
    assert(os.execute(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s/k.pem " ..
      "-out %s/c.pem -subj /CN=x -days 1 >/dev/null 2>&1"):format(h.q(dir), h.q(dir))))
    local l = assert(net.listen("127.0.0.1", 0))
    local port = l:port()
    l:close()
    os.execute(("cd %s && timeout 60 openssl s_server -quiet -WWW -accept 127.0.0.1:%d -cert %s/c.pem -key %s/k.pem " ..
      "-naccept 1 >/dev/null 2>&1 &"):format(h.q(dir .. "/www"), port, h.q(dir), h.q(dir)))
    for _ = 1, 50 do -- until it listens
      if net.port_free("127.0.0.1", port) == false then break end
      core.sleep(0.1)
    end
    -- the pin is wrong on purpose: the decode comes first
    assert_refused("[discovery] cluster-info holds no valid kubeconfig: cluster-info:5:512: " .. WHAT .. "786432 bytes",
      moonadm_limited { "join", "127.0.0.1:" .. port, "--token", "abcdef.0123456789abcdef",
        "--discovery-token-ca-cert-hash", "sha256:" .. ("0"):rep(64), "--root", dir .. "/root",
        "--ignore-preflight-errors", "all" })
  end)

  it("kubeadm-config's ClusterConfiguration as upgrade plan|diff|apply read it: refused, in bounded memory", function()
    h.write(dir .. "/cc.yaml", CONFIG)
    h.write(dir .. "/read.lua", [[
      local f = assert(io.open(..., "rb"))
      local text = f:read("a")
      f:close()
      local cluster, err = require("config").load_cluster(text, "kubeadm-config")
      io.stderr:write(tostring(err), "\n")
      os.exit(cluster and 0 or 1)
    ]])
    assert_refused("kubeadm-config" .. AT_2MIB,
      limited(("%s lua %s %s"):format(h.q(h.bin), h.q(dir .. "/read.lua"), h.q(dir .. "/cc.yaml"))))
  end)

  it("documents within the budget decode unchanged, in bounded memory, each string made once", function()
    -- 120 copies of a 1 MiB scalar, as values and as keys: 121 MiB of text in C, as much in Lua
    h.write(dir .. "/ok.yaml", "a: &a " .. ("x"):rep(1 << 20) .. "\nb: [" .. ("*a,"):rep(59) .. "*a]\n" ..
      "c: [" .. ("{*a : 1},"):rep(59) .. "{*a : 1}]\n")
    h.write(dir .. "/dec.lua", [[
      local yaml = require "moonadm.yaml"
      local f = assert(io.open(..., "rb"))
      local docs = assert(yaml.decode(f:read("a"), "ok.yaml"))
      f:close()
      local d, x = docs[1], ("x"):rep(1 << 20)
      assert(#d.b == 60 and d.b[60] == x and #d.c == 60 and d.c[60][x] == 1)
      local _, keys = yaml.pos(d.c[60])
      assert(keys[x] == 1) -- a copy keeps its anchor's position, as it always did
      print("decoded")
    ]])
    local how, code, text = limited(("%s lua %s %s"):format(h.q(h.bin), h.q(dir .. "/dec.lua"), h.q(dir .. "/ok.yaml")))
    assert.equal("exit", how, text)
    assert.equal(0, code, text)
    assert.equal("decoded\n", text)
  end)

  it("positions of keys and items are as before (an aliased key: its anchor's line)", function()
    local docs = assert(yaml.decode("k: &k key\nm:\n  *k : 1\n  two: [a,\n    b]\n  3: x\n", "p.yaml"))
    local line, keys = yaml.pos(docs[1].m)
    assert.equal(3, line)
    assert.same({ key = 1, two = 4, [3] = 6 }, keys)
    local _, items = yaml.pos(docs[1].m.two)
    assert.same({ 4, 5 }, items)
  end)
end)
