-- Input safety: every user-facing input refused with the expected message, never a Lua error.
-- Tables: command-line flags, config files (tests/spec/config_bad_spec.lua holds the per-field
-- table; here, malformed documents), patch files, discovery file/URL, cluster-info, CSR answers,
-- etcd member lists. Each row: the input and a plain-text fragment of the expected message.
-- The closing line prints how many bad inputs were tried.
local h = require "helpers"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"

local tried = 0

-- ------------------------------------------------------------------ flags
local TOKEN = "abcdef.0123456789abcdef"
local FLAGS = {
  { { "init", "--pod-network-cidr", "10.0.0.0/33" }, '--pod-network-cidr: ClusterConfiguration.networking.podSubnet: "10.0.0.0/33" is not a valid CIDR' },
  { { "init", "--service-cidr", "nonsense" }, '--service-cidr: ClusterConfiguration.networking.serviceSubnet: "nonsense" is not a valid CIDR' },
  { { "init", "--apiserver-bind-port", "99999" }, "99999 is not a valid port number (1-65535)" },
  { { "init", "--apiserver-bind-port", "http" }, "--apiserver-bind-port" },
  { { "init", "--apiserver-advertise-address", "999.1.1.1" }, '"999.1.1.1" is not a valid IP address' },
  { { "init", "--token", "BAD" }, '"BAD" is not a valid bootstrap token (expected the format [a-z0-9]{6}.[a-z0-9]{16})' },
  { { "init", "--certificate-key", "xyz", "--upload-certs" }, '"xyz" is not a valid certificate key (expected 64 hex digits: a 32-byte AES key)' },
  { { "init", "--feature-gates", "Foo=true" }, 'unknown feature gate "Foo"' },
  { { "init", "--feature-gates", "NodeLocalCRISocket=maybe" }, 'invalid value "maybe" for feature-gate key "NodeLocalCRISocket"' },
  { { "init", "--feature-gates", "EtcdLearnerMode=true" }, "EtcdLearnerMode" },
  { { "init", "--kubernetes-version", "v1.10.0" }, "only supports deploying clusters with the control plane version >= 1.34.0" },
  { { "init", "--kubernetes-version", "banana" }, '"banana" is not a valid Kubernetes version' },
  { { "init", "--no-such-flag" }, "unknown flag: --no-such-flag" },
  { { "init", "--token-ttl", "forever" }, '"forever" is not a valid duration' },
  { { "init", "--config", "/nonexistent.yaml" }, 'unable to read config from "/nonexistent.yaml"' },
  { { "init", "--config", "/" }, 'unable to read config from "/": / is a directory, not a regular file' },
  { { "init", "--config", "/dev/zero" }, 'unable to read config from "/dev/zero": /dev/zero is a character device, not a regular file' },
  { { "init", "--cri-socket", "relative/sock" }, '"relative/sock" is not a valid CRI endpoint (expected unix:///path/to/socket)' },
  { { "init", "--node-name", "Bad_Name" }, '"Bad_Name" is not a valid node name' },
  { { "init", "--ignore-preflight-errors", "all,Foo" }, "don't specify individual checks if 'all' is used" },
  { { "init", "--skip-phases", "nosuchphase" }, "invalid phase name: nosuchphase" },
  { { "init", "--patches", "/nonexistent" }, 'could not list patch files for path "/nonexistent"' },
  { { "init", "phase", "nosuchphase" }, 'unknown phase "nosuchphase" for "init"' },
  { { "join" }, "JoinConfiguration.discovery.bootstrapToken.token: field is required" },
  { { "join", "192.0.2.131:6443", "--token", TOKEN }, "using token-based discovery without caCertHashes can be unsafe" },
  { { "join", "192.0.2.131:6443", "--token", TOKEN, "--discovery-token-ca-cert-hash", "sha256:zz" }, '"sha256:zz": a sha256 hash is 64 hex digits' },
  { { "join", "192.0.2.131:6443", "--token", TOKEN, "--discovery-token-ca-cert-hash", "md5:00" }, 'unsupported hash type "md5" (only sha256)' },
  { { "join", "192.0.2.131:6443", "--token", TOKEN, "--discovery-token-unsafe-skip-ca-verification", "--control-plane",
      "--certificate-key", "zz" }, 'JoinConfiguration.controlPlane.certificateKey: "zz" is not a valid certificate key' },
  { { "token", "create", "nothex" }, 'the bootstrap token "nothex" was not of the form' },
  { { "certs", "renew", "nosuchcert" }, 'unknown certificate "nosuchcert"' },
  { { "nosuchcommand" }, 'unknown command "nosuchcommand"' },
}

describe("bad flags", function()
  local dir
  setup(function() dir = h.tmpdir() end)
  teardown(function() h.rmrf(dir) end)
  for _, row in ipairs(FLAGS) do
    it(table.concat(row[1], " "), function()
      local a = { table.unpack(row[1]) }
      if a[1] == "init" or a[1] == "join" then a[#a + 1] = "--dry-run" end
      a[#a + 1] = "--root"; a[#a + 1] = dir .. "/root"
      local code, out, err = h.moonadm(a)
      tried = tried + 1
      assert.not_equal(0, code, out .. err)
      h.no_raw_error(out .. err)
      assert(( out .. err):find(row[2], 1, true), ("expected %q in:\n%s%s"):format(row[2], out, err))
    end)
  end
end)

-- ------------------------------------------------------------------ config documents
-- 9 aliases of 9 aliases of ..., `levels` deep, after `head` (issue 18: 7 levels took 2.8 GB)
local function alias_bomb(head, levels)
  local lines = { head, "a0: &a0 [x, x, x, x, x, x, x, x, x]" }
  for i = 1, levels - 1 do
    lines[#lines + 1] = ("a%d: &a%d [%s]"):format(i, i, ("*a" .. (i - 1) .. ", "):rep(8) .. "*a" .. (i - 1))
  end
  return table.concat(lines, "\n") .. "\n"
end
local V1BETA4_INIT = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"

local CONFIGS = {
  { "", "no InitConfiguration or ClusterConfiguration kind was found in the YAML file" },
  { "- a\n- list\n", "not_mapping" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n  bad: indent\n", "bad.yaml:3" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\na: 1\na: 2\n", "bad.yaml:4" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration: *nope\n", "bad.yaml:3" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration: []\n", "InitConfiguration.nodeRegistration" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens: {a: 1}\n", "InitConfiguration.bootstrapTokens" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint: {bindPort: -1}\n", "bindPort" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking: {podSubnet: 10.0.0.0/8, serviceSubnet: 10.0.0.0/8}\n", "" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: 'a:b:c:d'\n", "controlPlaneEndpoint" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\netcd: {local: {}, external: {endpoints: [https://x:2379]}}\n", "etcd" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\napiServer: {extraArgs: {a: b}}\n", "extraArgs" },
  { "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n\0binary\n", "bad.yaml" },
  { ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  name: " .. ("x"):rep(300) .. "\n"), "not a valid node name" },
  { alias_bomb("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration", 7), "bad.yaml:6:15: document contains excessive aliasing" },
  { alias_bomb("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration", 30), "bad.yaml:6:15: document contains excessive aliasing" },
  { V1BETA4_INIT .. "x: " .. ("["):rep(600) .. ("]"):rep(600) .. "\n", "bad.yaml:3:515: mappings and sequences nested more than 512 deep" },
  { V1BETA4_INIT .. "a: &d " .. ("["):rep(300) .. ("]"):rep(300) .. "\nb: " .. ("["):rep(300) .. "*d" .. ("]"):rep(300) .. "\n",
    "bad.yaml:4:304: the alias *d nests mappings and sequences more than 512 deep" },
  { V1BETA4_INIT .. "a: 1\nb: \255\n", "bad.yaml:4:4: invalid leading UTF-8 octet 0xff (byte 67)" },
  { V1BETA4_INIT .. "---\n- a\n- list\n", "bad.yaml:4: a configuration document must be a mapping, got a list" },
  { V1BETA4_INIT .. "---\n7\n", "bad.yaml:4: a configuration document must be a mapping, got an integer (7)" },
  { V1BETA4_INIT .. 'a: "x\n', "bad.yaml:4:1: found unexpected end of stream while scanning a quoted scalar that starts at 3:4" },
}

describe("bad config documents", function()
  local dir
  setup(function() dir = h.tmpdir() end)
  teardown(function() h.rmrf(dir) end)
  for i, row in ipairs(CONFIGS) do
    it(("config %d: %s"):format(i, row[2] ~= "" and row[2] or "overlapping subnets"), function()
      h.write(dir .. "/bad.yaml", row[1])
      local code, out, err = h.moonadm { "init", "--config", dir .. "/bad.yaml", "--dry-run", "--root", dir .. "/root" }
      tried = tried + 1
      h.no_raw_error(out .. err)
      assert.not_equal(0, code, out .. err)
      if row[2] == "not_mapping" then
        assert.matches("bad%.yaml", out .. err)
      else
        assert(( out .. err):find(row[2], 1, true), ("expected %q in:\n%s%s"):format(row[2], out, err))
      end
    end)
  end
end)

-- ------------------------------------------------------------------ patch files
local PATCHES = {
  { "kube-apiserver.yaml", "spec: [unclosed", "kube-apiserver.yaml" },
  { "kube-apiserver+json.yaml", "op: add\npath: /x\n", "kube-apiserver+json.yaml" },
  { "kube-apiserver+json.yaml", "- op: frobnicate\n  path: /spec\n", "frobnicate" },
  { "kube-apiserver+json.yaml", "- op: remove\n  path: /spec/nothere/0\n", "/spec/nothere/0" },
  { "kube-apiserver+strategic.yaml", "- a list\n", "document 1: a strategic patch must be a mapping" },
  { "kube-apiserver+json.yaml", "- op: replace\n  path: /spec/containers/99/image\n  value: x\n", "/spec/containers/99/image" },
  { "kube-apiserver.yaml", alias_bomb("spec: {}", 9), "kube-apiserver.yaml:5:15: document contains excessive aliasing" },
  { "kube-apiserver.yaml", "spec: {}\nx: \255\n", "kube-apiserver.yaml:2:4: invalid leading UTF-8 octet 0xff" },
}

describe("bad patch files", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmrf(dir) end)
  for _, row in ipairs(PATCHES) do
    it(row[1] .. ": " .. row[3], function()
      h.write(dir .. "/patches/" .. row[1], row[2])
      local code, out, err = h.moonadm { "init", "phase", "control-plane", "apiserver", "--patches", dir .. "/patches",
        "--root", dir .. "/root", "--apiserver-advertise-address", "192.0.2.131" }
      tried = tried + 1
      h.no_raw_error(out .. err)
      assert.not_equal(0, code, out .. err)
      assert(( out .. err):find(row[3], 1, true), ("expected %q in:\n%s%s"):format(row[3], out, err))
      -- nothing half-patched was written
      assert.is_nil(h.read(dir .. "/root/etc/kubernetes/manifests/kube-apiserver.yaml"))
    end)
  end
end)

-- ------------------------------------------------------------------ discovery file / URL, cluster-info
local discovery = require "cluster.discovery"
local kubeconfig = require "kube.kubeconfig"
local api = require "moonadm.api"

local CA = [[
-----BEGIN CERTIFICATE-----
MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAVMRMwEQYDVQQDEwprdWJlcm5l
-----END CERTIFICATE-----
]]
local CLUSTER_INFO = {
  { "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n", "holds no cluster with a server" },
  { "apiVersion: v1\nkind: Config\nclusters: []\n", "holds no cluster with a server" },
  { "clusters: [unclosed", "holds no valid kubeconfig" },
  { "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://192.0.2.131:6443\n", "has no certificate-authority-data" },
  { "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: 5\n", "holds no cluster with a server" },
  { "7", "holds no cluster with a server" },
  { alias_bomb("apiVersion: v1\nkind: Config", 9), "cluster-info:6:15: document contains excessive aliasing" },
  { alias_bomb("apiVersion: v1\nkind: Config", 40), "cluster-info:6:15: document contains excessive aliasing" },
  { "clusters: " .. ("["):rep(1000) .. ("]"):rep(1000), "cluster-info:1:522: mappings and sequences nested more than 512 deep" },
}

describe("bad cluster-info and discovery files", function()
  for i, row in ipairs(CLUSTER_INFO) do
    it(("cluster-info %d: %s"):format(i, row[2]), function()
      local ok, err = pcall(discovery.cluster_of, row[1], "cluster-info")
      tried = tried + 1
      assert.is_false(ok)
      h.no_raw_error(err)
      assert(err:find(row[2], 1, true), err)
    end)
  end

  it("a CA bundle that does not match the pin is not trusted", function()
    tried = tried + 1
    assert.is_falsy(discovery.pinned(CA, { "sha256:" .. ("0"):rep(64) }))
    assert.is_falsy(discovery.pinned("not a pem", { "sha256:" .. ("0"):rep(64) }))
  end)

  local KUBECONFIGS = {
    { "", "kubeconfig" },
    { "apiVersion: v1\nkind: Config\ncurrent-context: nope\ncontexts: []\n", "nope" },
    { "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: x, user: u}\nclusters: []\nusers: []\n", "x" },
    { "apiVersion: v1\nclusters: 3\n", "disc.conf" },
  }
  for i, row in ipairs(KUBECONFIGS) do
    it(("discovery kubeconfig %d is refused: %s"):format(i, row[2]), function()
      local ok, r, err = pcall(kubeconfig.parse, row[1], { filename = "disc.conf", read = function() return nil, "no" end })
      tried = tried + 1
      local msg = ok and err or r
      assert.is_true(not ok or r == nil, "accepted")
      assert.is_string(msg)
      h.no_raw_error(msg)
      assert(msg:find(row[2], 1, true), msg)
    end)
  end

  local FILES = {
    { "/nonexistent.conf", "cannot read the discovery file" },
    { "https://127.0.0.1:1/x.conf", "cannot fetch the discovery file https://127.0.0.1:1/x.conf" },
  }
  for _, row in ipairs(FILES) do
    it("join --discovery-file " .. row[1], function()
      local dir = h.tmpdir()
      local code, out, err = h.moonadm { "join", "--discovery-file", row[1], "--root", dir }
      h.rmrf(dir)
      tried = tried + 1
      assert.not_equal(0, code)
      h.no_raw_error(out .. err)
      assert(( out .. err):find(row[2], 1, true), out .. err)
    end)
  end

  it("a discovery file without client credentials or tlsBootstrapToken", function()
    local dir = h.tmpdir()
    h.write(dir .. "/d.conf", ("apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://192.0.2.131:6443\n" ..
      "    certificate-authority-data: %s\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"):format(encoding.base64_encode(CA)))
    local code, out, err = h.moonadm { "join", "--discovery-file", dir .. "/d.conf", "--root", dir .. "/root" }
    h.rmrf(dir)
    tried = tried + 1
    assert.not_equal(0, code)
    h.no_raw_error(out .. err)
    assert.matches("carries no client credentials", out .. err)
  end)
end)

-- ------------------------------------------------------------------ etcd member lists, CSR answers
local etcd = require "moonadm.etcd"

local canned = h.canned_http

local MEMBER_LISTS = {
  -- an answer of the wrong shape is an error, never an empty list (a reset or join could act on one);
  -- "" expects a refusal with any message (etcd's error bodies under 200)
  { "{}", "members" },
  { '{"members":{}}', "members" },
  { '{"members":[{"ID":"x","peerURLs":[]}]}', 'a member without a valid uint64 "ID"' },
  { '{"members":[{"ID":"18446744073709551616"}]}', 'a member without a valid uint64 "ID"' },
  { '{"members":[{"ID":-1}]}', 'a member without a valid uint64 "ID"' },
  { '{"members":[7]}', "member" },
  { '{"members":[{"ID":"1","peerURLs":"https://x"}]}', "peerURLs" },
  { "not json", "not an etcd answer" },
  { '{"members":[{"ID":"1"}]', "not an etcd answer" },
  { '{"error":"etcdserver: unhealthy cluster","code":14}', "" },
  { '{"error":"x","code":99}', "" },
}

describe("bad etcd member lists", function()
  for i, row in ipairs(MEMBER_LISTS) do
    it(("member list %d: %s"):format(i, row[1]), function()
      canned(("{ { status = 200, body = %q } }"):format(row[1]), function(url)
        local c = assert(etcd.new { endpoints = { url }, timeout = 3 })
        local r, err = c:member_list()
        tried = tried + 1
        if r then
          -- accepted: then it is well-formed enough to use, with uint64 ids
          for _, m in ipairs(r.members) do assert.is_string(m.id_hex) end
          if row[2] == "tolerated" then
            for _, m in ipairs(r.members) do assert.same({}, m.peer_urls) end
          else
            assert.equal(0, #r.members, "members read from a bad list")
            assert.equal("", row[2], "accepted a bad member list")
          end
        else
          assert.is_string(err)
          assert(err:find(row[2], 1, true), err)
        end
        c:close()
      end)
    end)
  end
end)

local node_api_ok, node_api = pcall(require, "lab.node_api")
describe("bad CSR answers (the certificate a CSR's status returns)", function()
  local pki = require "moonadm.pki"
  local BAD = { "", "not a pem", CA, encoding.base64_encode("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") }
  for i, cert in ipairs(BAD) do
    it(("certificate %d is refused by the PEM reader with a message"):format(i), function()
      tried = tried + 1
      local c, err = pki.read_cert(cert)
      assert.is_nil(c)
      assert.is_string(err)
      h.no_raw_error(err)
    end)
  end
  it("lab.node_api loads (the stand-in that reads CSR answers)", function() assert.is_true(node_api_ok, tostring(node_api)) end)
end)

describe("bad inputs", function()
  it("count", function()
    print(("\n[bad_inputs] %d bad inputs tried"):format(tried))
    assert.is_true(tried >= 60, tried)
  end)
end)
