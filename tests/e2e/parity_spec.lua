-- Objects as kubeadm makes them: on one lab, the reference kubeadm v1.35.4 inits a spare (s1) with
-- the config moonadm's init used on cp1, then joins a control plane (s2) and a worker (s3) to it;
-- moonadm joins a control plane (s4) and a worker (s5) to cp1. Every object both clusters hold
-- (tests/e2e/objects.lua: ConfigMaps, Secrets' types and keys, RBAC, Deployments, DaemonSets,
-- Services, Nodes' labels, taints and annotations) is compared after normalising what must differ;
-- any other difference fails unless listed in EXPECTED with its entry in docs/compatibility.md.
-- The joins' closing text and a control-plane join's certificate messages are held against
-- kubeadm's output too. NodeLocalCRISocket=false, so the CRI socket annotation is compared as well.
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"
local objects = require "objects"

local NAME, SUB = "e2epar", "10.252.41"
local IP = { cp1 = SUB .. ".11", s1 = SUB .. ".12", s2 = SUB .. ".13", s3 = SUB .. ".14", s4 = SUB .. ".15", s5 = SUB .. ".16" }
local KUBEADM_TOKEN = "kbdmzz.0123456789abcdef"

-- The same roles on both sides: kubeadm's cluster s1 (CP), s2 (CP join), s3 (worker); moonadm's
-- cp1, s4, s5.
local ROLE = { cp1 = "CP1", s1 = "CP1", s4 = "CP2", s2 = "CP2", s5 = "W1", s3 = "W1" }

-- Differences that are not random; each has an entry in docs/compatibility.md ("Cluster objects").
local EXPECTED = {}

local function names_for(nodes)
  local out = {}
  for _, n in ipairs(nodes) do
    out[n] = "<" .. ROLE[n] .. ">"
    out[IP[n]] = "<" .. ROLE[n] .. "-IP>"
  end
  return out
end

describe("objects as kubeadm makes them (reference kubeadm init and joins beside moonadm's)", function()
  local st, out = nil, {}
  local kubeadm = fixture.bin_dir .. "/kubeadm"

  local function kubectl_for(kubeconfig)
    return function(args) return fixture.kubectl(st, args, kubeconfig) end
  end
  local moonadm_kc, kubeadm_kc

  setup(function()
    local cfg = h.tmpdir() .. "/cluster.yaml"
    h.write(cfg, ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: %s:6443\n" ..
      "featureGates:\n  NodeLocalCRISocket: false\n"):format(IP.cp1))
    fixture.LABS.parity = { name = NAME, subnet = SUB, args = { "--control-planes", "1", "--spares", "5", "--config", cfg } }
    st = fixture.get("parity")
    moonadm_kc = st.dir .. "/super-admin.conf"
    kubeadm_kc = st.dir .. "/s1/etc/kubernetes/admin.conf"
    -- kubeadm's init on s1 with cp1's config: its address, name and token swapped
    local init = h.read(st.dir .. "/cp1-init.yaml")
    init = init:gsub(IP.cp1:gsub("%.", "%%."), IP.s1):gsub("name: cp1", "name: s1"):gsub("%f[%w]" .. st.token:gsub("%.", "%%."), KUBEADM_TOKEN)
    h.write(st.dir .. "/s1-init.yaml", init)
    local code, o, e = fixture.exec(st, "s1", { kubeadm, "init", "--config", st.dir .. "/s1-init.yaml",
      "--ignore-preflight-errors=all", "--upload-certs" })
    out.kinit = { code = code, text = o .. e }
    if code ~= 0 then return end
    local function join(node, tool, endpoint, token, cp)
      local argv = { tool == "kubeadm" and kubeadm or "moonadm", "join", endpoint, "--token", token,
        "--discovery-token-unsafe-skip-ca-verification", "--node-name", node, "--ignore-preflight-errors=all" }
      if cp then
        for _, a in ipairs { "--control-plane", "--certificate-key", st.certificate_key, "--apiserver-advertise-address", IP[node] } do
          argv[#argv + 1] = a
        end
      end
      local c, so, se = fixture.exec(st, node, argv)
      out[node] = { code = c, stdout = so, text = so .. se }
    end
    join("s2", "kubeadm", IP.s1 .. ":6443", KUBEADM_TOKEN, true)
    join("s4", "moonadm", IP.cp1 .. ":6443", st.token, true)
    join("s3", "kubeadm", IP.s1 .. ":6443", KUBEADM_TOKEN, false)
    join("s5", "moonadm", IP.cp1 .. ":6443", st.token, false)
    out.ready = fixture.nodes_ready(st, kubeadm_kc, 3) and fixture.nodes_ready(st, moonadm_kc, 3)
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", NAME } end)

  it("the reference kubeadm inits the spare and joins the other two to it; moonadm joins its two", function()
    assert.equal(0, out.kinit.code, out.kinit.text)
    for _, n in ipairs { "s2", "s3", "s4", "s5" } do assert.equal(0, out[n].code, n .. ":\n" .. out[n].text) end
    assert.is_true(out.ready, "every Node Ready in both clusters")
  end)

  it("both clusters hold the same objects, but for what must differ", function()
    assert.equal(0, out.kinit.code, out.kinit.text)
    -- controllers fill in some fields a moment after the nodes are Ready (the TTL annotation, the
    -- root CA ConfigMaps, revisions): a difference must last three dumps, 3 s apart
    local k, m, diffs
    for attempt = 1, 3 do
      k = objects.dump(kubectl_for(kubeadm_kc), names_for { "s1", "s2", "s3" })
      m = objects.dump(kubectl_for(moonadm_kc), names_for { "cp1", "s4", "s5" })
      diffs = objects.diff(k, m)
      if #diffs == #EXPECTED or attempt == 3 then break end
      os.execute("sleep 3")
    end
    local n = 0
    for _ in pairs(k) do n = n + 1 end
    assert.truthy(n > 100, "kubeadm's cluster has only " .. n .. " objects")
    assert.same(EXPECTED, diffs)
  end)

  it("every node of both clusters carries the CRI socket annotation (NodeLocalCRISocket=false)", function()
    for _, kc in ipairs { kubeadm_kc, moonadm_kc } do
      local code, text = kubectl_for(kc) { "get", "nodes", "-o", "json" }
      assert.equal(0, code, text)
      local items = cjson.decode(text).items
      assert.equal(3, #items)
      for _, node in ipairs(items) do
        assert.equal("unix:///var/run/containerd/containerd.sock",
          (node.metadata.annotations or {})["kubeadm.alpha.kubernetes.io/cri-socket"], node.metadata.name)
      end
    end
  end)

  it("a join ends with kubeadm's closing text, worker and control plane", function()
    local function tail(text) return text:match("\nThis node has joined the cluster.*$") end
    for _, pair in ipairs { { "s3", "s5" }, { "s2", "s4" } } do
      local want = tail(out[pair[1]].stdout)
      assert.truthy(want, "no closing text in kubeadm's output:\n" .. out[pair[1]].text)
      assert.equal(want, tail(out[pair[2]].stdout))
    end
  end)

  it("a control-plane join's certificate messages are kubeadm's, in its order", function()
    local function certs(node, first)
      local names = names_for { node, first }
      local lines = {}
      for l in out[node].text:gmatch("[^\n]+") do
        if l:match("^%[certs%]") then lines[#lines + 1] = objects.normalize_string(l, names) end
      end
      return lines
    end
    local k, m = certs("s2", "s1"), certs("s4", "cp1")
    -- kubeadm walks the CAs in Go map order: the same lines, the first and the last two in place
    assert.equal(k[1], m[1])
    assert.same({ k[#k - 1], k[#k] }, { m[#m - 1], m[#m] })
    table.sort(k)
    table.sort(m)
    assert.same(k, m)
  end)
end)
