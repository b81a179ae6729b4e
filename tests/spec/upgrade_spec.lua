-- `moonadm upgrade`: the version policy (scripts/upgrade/version.lua), the plan built from facts
-- and its printers (scripts/upgrade/plan.lua), the manifest diff, the NodeLocalCRISocket flags
-- migration, the kubelet.conf server rewrite and the addon gate. The lab e2e
-- (tests/e2e/upgrade_spec.lua) runs the phases for real.
local h = require "helpers"
local cjson = require "cjson"
local yaml = require "moonadm.yaml"
local version = require "upgrade.version"
local plan = require "upgrade.plan"
local difflib = require "upgrade.difflib"
local kubeletconfig = require "upgrade.kubelet_config"
local kubeconfig = require "upgrade.kubelet_conf"
local addon = require "upgrade.addon"
local releases = require "config.releases"

local function check(target, cluster, extra)
  local o = { target = target, cluster = cluster }
  for k, v in pairs(extra or {}) do o[k] = v end
  return version.check(o)
end

describe("upgrade version policy", function()
  it("parses and compares versions", function()
    assert.same({ 1, 35, 4 }, { version.parse("v1.35.4").major, version.parse("1.35.4").minor, version.parse("v1.35.4").patch })
    assert.equal("v1.35.4", version.normalize("1.35.4"))
    assert.is_nil(version.parse("1.35"))
    assert.equal(-1, version.compare("v1.36.0-rc.1", "v1.36.0"))
    assert.equal(1, version.compare("v1.35.10", "v1.35.9"))
    assert.equal(0, version.compare("v1.35.4", "1.35.4"))
  end)

  it("allows the same version (kubeadm's reconfiguration) and a patch upgrade", function()
    local r = check("v1.35.4", "v1.35.4")
    assert.same({}, r.mandatory); assert.same({}, r.skippable)
    r = check("v1.35.4", "v1.35.1")
    assert.same({}, r.mandatory); assert.same({}, r.skippable)
  end)

  it("allows one minor up and refuses two", function()
    local r = check("v1.35.4", "v1.34.2")
    assert.same({}, r.mandatory); assert.same({}, r.skippable)
    r = check("v1.35.4", "v1.33.0")
    assert.equal(1, #r.mandatory > 0 and 1 or 0)
    assert.matches("only 1 minor version at a time", table.concat(r.mandatory, "\n"))
  end)

  it("refuses a downgrade across minors (mandatory) and a patch downgrade without --force", function()
    local r = check("v1.34.9", "v1.35.0")
    assert.matches("downgrading across minor versions is not supported", table.concat(r.mandatory, "\n"))
    r = check("v1.35.1", "v1.35.4")
    assert.same({}, r.mandatory)
    assert.matches("Downgrades are not supported yet", r.skippable[1])
    assert.has_no.errors(function() version.enforce(r, true, function() end) end)
    assert.has_error(function() version.enforce(r, false, function() end) end)
  end)

  it("needs --force for a version newer than kubeadm, and the allow flags for pre-releases", function()
    -- "the kubeadm version" is the newest release moonadm knows of the target's minor
    local r = check("v1.36.0", "v1.35.4")
    assert.same({}, r.mandatory)
    assert.same({}, r.skippable)
    r = check("v1.36.9", "v1.36.3")
    assert.same({}, r.mandatory)
    assert.matches('higher than the kubeadm version "v1.36.3"', r.skippable[1])
    -- a minor moonadm does not speak cannot be forced
    r = check("v1.38.0", "v1.37.2")
    assert.matches("Kubernetes v1%.38%.0 is not supported", table.concat(r.mandatory, "\n"))
    r = check("v1.35.5-rc.0", "v1.35.4")
    assert.matches("unstable version", table.concat(r.skippable, "\n"))
    r = check("v1.35.5-rc.0", "v1.35.4", { allow_rc = true })
    assert.is_nil(table.concat(r.skippable, "\n"):match("unstable"))
    r = check("v1.35.5-alpha.1", "v1.35.4", { allow_rc = true })
    assert.matches("unstable version", table.concat(r.skippable, "\n"))
  end)

  it("refuses targets below the minimum control plane kubeadm deploys", function()
    local r = check("v1.33.5", "v1.33.1")
    assert.matches("minimum supported version", table.concat(r.mandatory, "\n"))
  end)

  it("warns about kubelets too old or newer than the target, never fails on them", function()
    local r = check("v1.35.4", "v1.35.4", { kubelets = {
      { node = "a", version = "v1.31.0" }, { node = "b", version = "v1.32.0" }, { node = "c", version = "v1.36.1" } } })
    assert.same({}, r.mandatory); assert.same({}, r.skippable)
    local w = table.concat(r.warnings, "\n")
    assert.matches("too old.-a %(v1%.31%.0%)", w)
    assert.is_nil(w:match("b %(v1%.32"))
    assert.matches("newer than the control plane.-c %(v1%.36%.1%)", w)
  end)

  it("enforce names every error and the --force hint", function()
    local r = check("v1.37.0", "v1.35.4")
    local ok, err = pcall(version.enforce, r, false, function() end)
    assert.is_false(ok)
    assert.matches("FATAL", err)
    assert.matches("only 1 minor", err)
    ok = pcall(version.enforce, r, true, function() end)
    assert.is_false(ok) -- mandatory stays fatal with --force
  end)
end)

local FACTS = {
  cluster_version = "v1.34.3",
  kubelets = { { node = "cp1", version = "v1.34.3" }, { node = "w1", version = "v1.34.3" } },
  static = {
    ["kube-apiserver"] = { { node = "cp1", image = "registry.k8s.io/kube-apiserver:v1.34.3" } },
    ["kube-controller-manager"] = { { node = "cp1", image = "registry.k8s.io/kube-controller-manager:v1.34.3" } },
    ["kube-scheduler"] = { { node = "cp1", image = "registry.k8s.io/kube-scheduler:v1.34.3" } },
    etcd = { { node = "cp1", image = "registry.k8s.io/etcd:3.6.5-0" } },
  },
  coredns = "registry.k8s.io/coredns/coredns:v1.12.1",
  kube_proxy = "registry.k8s.io/kube-proxy:v1.34.3",
  local_etcd = true,
}

describe("upgrade plan", function()
  it("targets the next minor's newest known release when no version is given, never the network", function()
    local p = plan.build(FACTS)
    assert.equal("v1.35.4", p.target)
    assert.equal("v1.36.3", plan.default_target("v1.35.4"))
    assert.equal("v1.37.2", plan.default_target("v1.36.1"))
    assert.equal("v1.37.2", plan.default_target("v1.37.0"))
    assert.is_false(p.up_to_date)
    local names = {}
    for _, r in ipairs(p.components) do names[#names + 1] = r.name .. "@" .. r.node .. "=" .. r.current .. ">" .. r.target end
    assert.same({
      "kube-apiserver@cp1=v1.34.3>v1.35.4", "kube-controller-manager@cp1=v1.34.3>v1.35.4",
      "kube-scheduler@cp1=v1.34.3>v1.35.4", "kube-proxy@=v1.34.3>v1.35.4",
      "CoreDNS@=v1.12.1>v1.13.1", "etcd@cp1=3.6.5-0>3.6.6-0" }, names)
    assert.equal(2, #p.kubelets)
  end)

  it("prints kubeadm's tables and the apply command", function()
    local t = plan.text(plan.build(FACTS))
    assert.matches("%[upgrade/versions%] Cluster version: v1%.34%.3", t)
    assert.matches("COMPONENT%s+NODE%s+CURRENT%s+TARGET", t)
    assert.matches("kube%-apiserver%s+cp1%s+v1%.34%.3%s+v1%.35%.4", t)
    assert.matches("kubelet%s+w1%s+v1%.34%.3", t)
    assert.matches("moonadm upgrade apply v1%.35%.4", t)
    assert.matches("kubelet%.config%.k8s%.io%s+v1beta1%s+v1beta1%s+no", t)
  end)

  it("says up-to-date when everything runs the target", function()
    local f = cjson.decode(cjson.encode(FACTS))
    -- the newest minor moonadm speaks, at its newest release: nothing further to offer
    local newest = releases.of(releases.newest())
    f.cluster_version = newest.latest
    for _, k in ipairs(f.kubelets) do k.version = newest.latest end
    for comp, rows in pairs(f.static) do
      for _, r in ipairs(rows) do r.image = r.image:gsub(":.*$", ":" .. (comp == "etcd" and newest.etcd or newest.latest)) end
    end
    f.coredns = "registry.k8s.io/coredns/coredns:" .. newest.coredns
    f.kube_proxy = "registry.k8s.io/kube-proxy:" .. newest.latest
    local p = plan.build(f)
    assert.is_true(p.up_to_date)
    assert.matches("Awesome, you're up%-to%-date! Enjoy!", plan.text(p))
    assert.same({}, cjson.decode(plan.json(p)).availableUpgrades)
  end)

  it("-o json and -o yaml are output.kubeadm.k8s.io/v1alpha3 UpgradePlan", function()
    local p = plan.build(FACTS, { target = "v1.35.4" })
    local j = cjson.decode(plan.json(p))
    assert.equal("UpgradePlan", j.kind)
    assert.equal("output.kubeadm.k8s.io/v1alpha3", j.apiVersion)
    assert.equal(1, #j.availableUpgrades)
    local first = j.availableUpgrades[1].components[1]
    assert.same({ name = "kubelet", currentVersion = "v1.34.3", newVersion = "v1.35.4", nodeName = "cp1" }, first)
    assert.is_nil(plan.json(p):find("\\/", 1, true))
    local y = yaml.decode(plan.yaml(p))[1]
    assert.equal("UpgradePlan", y.kind)
    assert.equal(2, #y.configVersions)
  end)

  it("reports a two-minor jump as an error and offers no upgrade", function()
    local f = cjson.decode(cjson.encode(FACTS))
    f.cluster_version = "v1.33.0"
    local p = plan.build(f)
    assert.is_true(#p.policy.mandatory > 0)
    assert.matches("%[ERROR%]", plan.text(p))
    assert.same({}, cjson.decode(plan.json(p)).availableUpgrades)
  end)

  it("leaves out disabled addons and external etcd", function()
    local f = cjson.decode(cjson.encode(FACTS))
    f.dns_disabled, f.proxy_disabled, f.local_etcd = true, true, false
    local names = {}
    for _, r in ipairs(plan.build(f).components) do names[r.name] = true end
    assert.is_nil(names.CoreDNS); assert.is_nil(names["kube-proxy"]); assert.is_nil(names.etcd)
  end)
end)

describe("upgrade helpers", function()
  it("diffs manifests as unified hunks (go-difflib's, as kubeadm prints them)", function()
    local a = "a\nb\nc\nd\ne\nf\ng\nh\n"
    local b = "a\nb\nc\nD\ne\nf\ng\nh\ni\n"
    local d = difflib.unified(a, b, "old", "new", 1)
    assert.equal("--- old\n+++ new\n@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n@@ -8,2 +8,3 @@\n h\n+i\n \n", d) -- (go-difflib: a last "\n" line)
    assert.equal("", difflib.unified(a, a))
  end)

  it("migrates --container-runtime-endpoint out of kubeadm-flags.env (seed 002)", function()
    local text = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/crio/crio.sock --hostname-override=n1 --v=2"\n'
    local new, sock = kubeletconfig.strip_cri_flag(text)
    assert.equal("unix:///run/crio/crio.sock", sock)
    assert.equal('KUBELET_KUBEADM_ARGS="--hostname-override=n1 --v=2"\n', new)
    new, sock = kubeletconfig.strip_cri_flag('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint unix:///x.sock --v=2"\n')
    assert.equal("unix:///x.sock", sock)
    assert.equal('KUBELET_KUBEADM_ARGS="--v=2"\n', new)
    assert.is_nil(kubeletconfig.strip_cri_flag('KUBELET_KUBEADM_ARGS="--v=2"\n'))
  end)

  it("rewrites kubelet.conf's server only when it is the control-plane endpoint (seed 000)", function()
    local kc = yaml.encode { apiVersion = "v1", kind = "Config", ["current-context"] = "k@c",
      contexts = { { name = "k@c", context = { cluster = "c", user = "k" } } },
      clusters = { { name = "c", cluster = { server = "https://lb:6443", ["certificate-authority-data"] = "AA==" } } },
      users = { { name = "k", user = { ["client-certificate"] = "/var/lib/kubelet/pki/kubelet-client-current.pem" } } } }
    local new = kubeconfig.rewrite(kc, "https://lb:6443", "https://192.0.2.131:6443")
    local doc = yaml.decode(new)[1]
    assert.equal("https://192.0.2.131:6443", doc.clusters[1].cluster.server)
    assert.equal("AA==", doc.clusters[1].cluster["certificate-authority-data"])
    local none, server = kubeconfig.rewrite(kc, "https://other:6443", "https://192.0.2.131:6443")
    assert.is_nil(none)
    assert.equal("https://lb:6443", server)
  end)

  it("holds the addons back while a control plane runs another kube-apiserver image", function()
    local function p(node, image)
      return { spec = { nodeName = node, containers = { { name = "kube-apiserver", image = image } } } }
    end
    local img = "registry.k8s.io/kube-apiserver:v1.35.4"
    assert.same({}, addon.not_upgraded({ p("cp1", img), p("cp2", img) }, img))
    assert.same({ "cp2 (registry.k8s.io/kube-apiserver:v1.34.3)" },
      addon.not_upgraded({ p("cp1", img), p("cp2", "registry.k8s.io/kube-apiserver:v1.34.3") }, img))
  end)
end)

describe("upgrade rollback", function()
  local control_plane = require "upgrade.control_plane"
  local function st(etcd_failed, node)
    return { etcd_failed = etcd_failed, upgrade_node = node, replaced = {
      { component = "etcd", image = "registry.k8s.io/etcd:3.6.8-0" }, { component = "kube-apiserver" } } }
  end
  local ctx = { cfg = { cluster = { kubernetesVersion = "v1.36.3" } } }

  it("restores an upgraded etcd only when etcd itself failed (kubeadm's rollbackOldManifests)", function()
    local names = function(list) local o = {} for _, r in ipairs(list) do o[#o + 1] = r.component end return o end
    assert.same({ "kube-apiserver" }, names(control_plane.restored(st(false))))
    assert.same({ "etcd", "kube-apiserver" }, names(control_plane.restored(st(true))))
  end)

  it("a rollback killed while etcd's manifest was away: the next run puts it back first", function()
    local fs = require "moonadm.fs"
    local root = h.tmpdir()
    local tmp = "/etc/kubernetes/tmp"
    h.write(root .. tmp .. "/kubeadm-backup-manifests-2026-01-01-00-00-00/etcd.yaml", "old-old\n")
    h.write(root .. tmp .. "/kubeadm-backup-manifests-2026-02-01-00-00-00/etcd.yaml", "previous\n")
    h.write(root .. tmp .. "/kubeadm-backup-manifests-2026-02-01-00-00-00/" .. require("upgrade.interrupted").MARK, "")
    h.write(root .. "/var/lib/etcd/member/snap/db", "data")
    h.write(root .. "/var/lib/etcd/.moonadm-restore/member/snap/db", "half")
    fs.set_root(root)
    local rctx = {}
    local ok, err = pcall(require("upgrade.interrupted").recover, rctx)
    fs.set_root("/")
    assert(ok, err)
    assert.equal("previous\n", h.read(root .. "/etc/kubernetes/manifests/etcd.yaml"))
    assert.equal("data", h.read(root .. "/var/lib/etcd/member/snap/db"))
    assert.is_nil(h.read(root .. "/var/lib/etcd/.moonadm-restore/member/snap/db"))
    assert.is_nil(h.read(root .. tmp .. "/kubeadm-backup-manifests-2026-02-01-00-00-00/" .. require("upgrade.interrupted").MARK))
    -- without the mark (a deleted manifest, not a rollback), nothing is guessed
    os.remove(root .. "/etc/kubernetes/manifests/etcd.yaml")
    fs.set_root(root)
    require("upgrade.interrupted").recover(rctx)
    fs.set_root("/")
    assert.is_nil(h.read(root .. "/etc/kubernetes/manifests/etcd.yaml"))
    h.rmrf(root)
  end)

  it("says what stays upgraded and which command to run again", function()
    local hint = control_plane.retry_hint(ctx, st(false), "kube-apiserver")
    assert.matches("etcd stays on its new image registry%.k8s%.io/etcd:3%.6%.8%-0", hint)
    assert.matches('run "moonadm upgrade apply v1%.36%.3" again', hint)
    assert.matches("crictl logs", hint)
    hint = control_plane.retry_hint(ctx, st(true, true), "etcd")
    assert.is_nil(hint:find("stays on", 1, true))
    assert.matches('run "moonadm upgrade node" again', hint)
  end)
end)

describe("upgrade node before the first control plane", function()
  local preflight = require "upgrade.preflight"
  local function ctx(ignore)
    return { flags = { ["ignore-preflight-errors"] = ignore or {} }, cfg = { upgrade = {} } }
  end

  it("refuses a kubelet of a newer minor than the cluster's version, saying what to run first", function()
    local ok, err = pcall(preflight.kubelet_newer, ctx(), "v1.35.4", "v1.36.3")
    assert.is_false(ok)
    assert.matches("%[ERROR KubeletVersion%]: this node's kubelet is v1%.36%.3, newer than the cluster's version v1%.35%.4", err)
    assert.matches("Run `moonadm upgrade apply v1%.36%.x` on the first control plane first", err)
  end)

  it("accepts the same or an older minor, no kubelet in PATH, and an ignored check", function()
    assert.is_nil(preflight.kubelet_newer(ctx(), "v1.36.3", "v1.36.3"))
    assert.is_nil(preflight.kubelet_newer(ctx(), "v1.36.3", "v1.35.4"))
    assert.is_nil(preflight.kubelet_newer(ctx(), "v1.35.4", nil))
    assert.is_nil(preflight.kubelet_newer(ctx { "KubeletVersion" }, "v1.35.4", "v1.36.3"))
  end)
end)
