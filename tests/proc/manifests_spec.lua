-- Static Pod manifests: every field compared with kubeadm v1.35's (reference §4), extraArgs,
-- extraVolumes, extraEnvs, CA dirs under the root, etcd (local, IPv6, external), stable bytes.
local config = require "config"
local context = require "framework.context"
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local h = require "helpers"
local args = require "kube.args"

local dir = h.top .. "/tests/spec/" -- its fixtures: tests/spec/fixtures

local HEAD = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: %s\n" ..
  "nodeRegistration:\n  name: cp1\n  criSocket: unix:///var/run/containerd/containerd.sock\n---\n" ..
  "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"

local function mkctx(root, cluster_yaml, adv, flags)
  local cfg = assert(config.load { text = HEAD:format(adv or "192.0.2.135") .. (cluster_yaml or ""), filename = "k.yaml",
    kind = "init", no_host_defaults = true })
  return context.new { command = "init", cfg = cfg, gates = cfg.gates, flags = flags or {}, root = root }
end

local function cmd_of(p) return p.spec.containers[1].command end

describe("static pod manifests", function()
  local root
  before_each(function() root = h.tmpdir(); fs.set_root(root) end)
  after_each(function() fs.set_root("/"); h.rmrf(root) end)

  it("kube-apiserver: kubeadm's flags, annotation, probes, volumes and pod fields", function()
    local p = require("manifests.apiserver").build(mkctx(root, "networking:\n  podSubnet: 10.244.0.0/16\n"))
    local want = {
      "kube-apiserver", "--advertise-address=192.0.2.135", "--allow-privileged=true", "--authorization-mode=Node,RBAC",
      "--client-ca-file=/etc/kubernetes/pki/ca.crt", "--enable-admission-plugins=NodeRestriction",
      "--enable-bootstrap-token-auth=true", "--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt",
      "--etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt",
      "--etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key", "--etcd-servers=https://127.0.0.1:2379",
      "--kubelet-client-certificate=/etc/kubernetes/pki/apiserver-kubelet-client.crt",
      "--kubelet-client-key=/etc/kubernetes/pki/apiserver-kubelet-client.key",
      "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
      "--proxy-client-cert-file=/etc/kubernetes/pki/front-proxy-client.crt",
      "--proxy-client-key-file=/etc/kubernetes/pki/front-proxy-client.key",
      "--requestheader-allowed-names=front-proxy-client",
      "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
      "--requestheader-extra-headers-prefix=X-Remote-Extra-", "--requestheader-group-headers=X-Remote-Group",
      "--requestheader-username-headers=X-Remote-User", "--secure-port=6443",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      "--service-account-key-file=/etc/kubernetes/pki/sa.pub",
      "--service-account-signing-key-file=/etc/kubernetes/pki/sa.key", "--service-cluster-ip-range=10.96.0.0/12",
      "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt", "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
    }
    assert.same(want, { table.unpack(cmd_of(p)) })
    assert.equal("v1", p.apiVersion); assert.equal("Pod", p.kind)
    assert.same({ name = "kube-apiserver", namespace = "kube-system",
      labels = { component = "kube-apiserver", tier = "control-plane" },
      annotations = { ["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] = "192.0.2.135:6443" } }, p.metadata)
    local s = p.spec
    assert.is_true(s.hostNetwork)
    assert.equal(2000001000, s.priority)
    assert.equal("system-node-critical", s.priorityClassName)
    assert.same({ seccompProfile = { type = "RuntimeDefault" } }, s.securityContext)
    local c = s.containers[1]
    assert.equal("registry.k8s.io/kube-apiserver:v1.35.4", c.image)
    assert.equal("IfNotPresent", c.imagePullPolicy)
    assert.same({ { containerPort = 6443, name = "probe-port", protocol = "TCP" } }, { table.unpack(c.ports) })
    assert.same({ requests = { cpu = "250m" } }, c.resources)
    assert.same({ failureThreshold = 8, initialDelaySeconds = 10, periodSeconds = 10, timeoutSeconds = 15,
      httpGet = { host = "192.0.2.135", path = "/livez", port = "probe-port", scheme = "HTTPS" } }, c.livenessProbe)
    assert.same({ failureThreshold = 3, periodSeconds = 1, timeoutSeconds = 15,
      httpGet = { host = "192.0.2.135", path = "/readyz", port = "probe-port", scheme = "HTTPS" } }, c.readinessProbe)
    assert.same({ failureThreshold = 24, initialDelaySeconds = 10, periodSeconds = 10, timeoutSeconds = 15,
      httpGet = { host = "192.0.2.135", path = "/livez", port = "probe-port", scheme = "HTTPS" } }, c.startupProbe)
    -- on an empty root only the two volumes kubeadm always mounts
    assert.same({ { name = "ca-certs", hostPath = { path = "/etc/ssl/certs", type = "DirectoryOrCreate" } },
      { name = "k8s-certs", hostPath = { path = "/etc/kubernetes/pki", type = "DirectoryOrCreate" } } }, { table.unpack(s.volumes) })
    assert.same({ { name = "ca-certs", mountPath = "/etc/ssl/certs", readOnly = true },
      { name = "k8s-certs", mountPath = "/etc/kubernetes/pki", readOnly = true } }, { table.unpack(c.volumeMounts) })
    assert.same({}, p.status)
  end)

  it("mounts the distro CA dirs that exist under the root, sorted by name", function()
    fs.mkdir("/etc/pki/tls/certs", "0755")
    fs.mkdir("/usr/share/ca-certificates", "0755")
    local p = require("manifests.apiserver").build(mkctx(root))
    local names = {}
    for _, v in ipairs(p.spec.volumes) do names[#names + 1] = v.name end
    assert.same({ "ca-certs", "etc-pki-tls-certs", "k8s-certs", "usr-share-ca-certificates" }, names)
    local cm = require("manifests.controller_manager").build(mkctx(root))
    names = {}
    for _, v in ipairs(cm.spec.volumes) do names[#names + 1] = v.name end
    assert.same({ "ca-certs", "etc-pki-tls-certs", "flexvolume-dir", "k8s-certs", "kubeconfig", "usr-share-ca-certificates" }, names)
  end)

  it("extraArgs override defaults (a new name may repeat), extraVolumes and extraEnvs are added", function()
    local p = require("manifests.apiserver").build(mkctx(root, [[
apiServer:
  extraArgs:
  - name: secure-port
    value: "7443"
  - name: authorization-mode
    value: Node,Bogus,RBAC,Webhook
  - name: audit-log-path
    value: /b
  - name: audit-log-path
    value: /a
  extraVolumes:
  - name: audit
    hostPath: /var/log/audit
    mountPath: /var/log/audit
    pathType: DirectoryOrCreate
  extraEnvs:
  - name: GODEBUG
    value: x509sha1=1
]]))
    local a = cmd_of(p)
    assert.truthy(require("framework.util").contains(a, "--secure-port=7443"))
    assert.falsy(require("framework.util").contains(a, "--secure-port=6443"))
    assert.truthy(require("framework.util").contains(a, "--authorization-mode=Node,RBAC,Webhook"))
    local i1, i2
    for i, x in ipairs(a) do
      if x == "--audit-log-path=/a" then i1 = i elseif x == "--audit-log-path=/b" then i2 = i end
    end
    assert.truthy(i1 and i2 and i2 < i1, "duplicates kept, in the given order")
    -- as the reference kubeadm v1.35.4: the defaults sorted, then the user's arguments as given
    assert.same({ "--secure-port=7443", "--authorization-mode=Node,RBAC,Webhook", "--audit-log-path=/b",
      "--audit-log-path=/a" }, { table.unpack(a, #a - 3) })
    assert.equal("--tls-private-key-file=/etc/kubernetes/pki/apiserver.key", a[#a - 4])
    local vols = {}
    for _, v in ipairs(p.spec.volumes) do vols[v.name] = v end
    assert.same({ name = "audit", hostPath = { path = "/var/log/audit", type = "DirectoryOrCreate" } }, vols.audit)
    local env = p.spec.containers[1].env
    local found
    for _, e in ipairs(env) do if e.name == "GODEBUG" then found = e.value end end
    assert.equal("x509sha1=1", found)
  end)

  it("an extraVolume without pathType is written with type \"\" (as the reference kubeadm v1.35.4)", function()
    local p = require("manifests.scheduler").build(mkctx(root,
      "scheduler:\n  extraVolumes:\n  - name: cfg\n    hostPath: /etc/sched\n    mountPath: /etc/sched\n"))
    local vols = {}
    for _, v in ipairs(p.spec.volumes) do vols[v.name] = v end
    assert.same({ name = "cfg", hostPath = { path = "/etc/sched", type = "" } }, vols.cfg)
    assert.matches('hostPath:\n      path: /etc/sched\n      type: ""\n', yaml.encode(p), 1, true)
  end)

  it("drops --authorization-mode when authorization-config is given", function()
    local p = require("manifests.apiserver").build(mkctx(root,
      "apiServer:\n  extraArgs:\n  - name: authorization-config\n    value: /etc/authz.yaml\n"))
    for _, x in ipairs(cmd_of(p)) do assert.falsy(x:match("^%-%-authorization%-mode")) end
  end)

  it("kube-controller-manager: flags with a pod subnet, external-CA mode, probes on bind-address", function()
    local cm = require "manifests.controller_manager"
    local p = cm.build(mkctx(root, "clusterName: prod\nnetworking:\n  podSubnet: 10.244.0.0/16\n"))
    assert.same({ "kube-controller-manager",
      "--allocate-node-cidrs=true",
      "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
      "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
      "--bind-address=127.0.0.1", "--client-ca-file=/etc/kubernetes/pki/ca.crt",
      "--cluster-cidr=10.244.0.0/16", "--cluster-name=prod",
      "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt", "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
      "--controllers=*,bootstrapsigner,tokencleaner", "--kubeconfig=/etc/kubernetes/controller-manager.conf",
      "--leader-elect=true", "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
      "--root-ca-file=/etc/kubernetes/pki/ca.crt", "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
      "--service-cluster-ip-range=10.96.0.0/12", "--use-service-account-credentials=true" }, { table.unpack(cmd_of(p)) })
    local c = p.spec.containers[1]
    assert.same({ requests = { cpu = "200m" } }, c.resources)
    assert.equal(10257, c.ports[1].containerPort)
    assert.equal("/healthz", c.livenessProbe.httpGet.path)
    assert.equal("127.0.0.1", c.livenessProbe.httpGet.host)
    assert.is_nil(c.readinessProbe)
    assert.is_nil(p.metadata.annotations)
    local vm = {}
    for _, m in ipairs(c.volumeMounts) do vm[m.name] = m end
    assert.same({ name = "kubeconfig", mountPath = "/etc/kubernetes/controller-manager.conf", readOnly = true }, vm.kubeconfig)
    assert.same({ name = "flexvolume-dir", mountPath = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec" }, vm["flexvolume-dir"])
    -- external CA: ca.crt without ca.key
    fs.write("/etc/kubernetes/pki/ca.crt", "x", "0644")
    local a = args.parse(cmd_of(cm.build(mkctx(root))))
    assert.equal("", a["cluster-signing-cert-file"])
    assert.equal("", a["cluster-signing-key-file"])
    -- probes follow a user's bind-address; an unspecified one gives no host (kubeadm's
    -- getProbeAddress, checked against the reference kubeadm v1.35.4)
    local q = cm.build(mkctx(root, "controllerManager:\n  extraArgs:\n  - name: bind-address\n    value: 0.0.0.0\n"))
    assert.is_nil(q.spec.containers[1].livenessProbe.httpGet.host)
    assert.is_nil(q.spec.containers[1].startupProbe.httpGet.host)
    q = cm.build(mkctx(root, "controllerManager:\n  extraArgs:\n  - name: bind-address\n    value: 127.0.0.2\n"))
    assert.equal("127.0.0.2", q.spec.containers[1].livenessProbe.httpGet.host)
  end)

  it("kube-scheduler: flags, probes, one kubeconfig volume", function()
    local p = require("manifests.scheduler").build(mkctx(root))
    assert.same({ "kube-scheduler", "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
      "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf", "--bind-address=127.0.0.1",
      "--kubeconfig=/etc/kubernetes/scheduler.conf", "--leader-elect=true" }, { table.unpack(cmd_of(p)) })
    local c = p.spec.containers[1]
    assert.equal(10259, c.ports[1].containerPort)
    assert.equal("/livez", c.livenessProbe.httpGet.path)
    assert.equal("/readyz", c.readinessProbe.httpGet.path)
    assert.same({ requests = { cpu = "100m" } }, c.resources)
    assert.same({ { name = "kubeconfig", hostPath = { path = "/etc/kubernetes/scheduler.conf", type = "FileOrCreate" } } },
      { table.unpack(p.spec.volumes) })
  end)

  it("etcd: kubeadm v1.35's flags, annotation, probes on the metrics port, data and cert volumes", function()
    local p = require("manifests.etcd").build(mkctx(root))
    assert.same({ "etcd", "--advertise-client-urls=https://192.0.2.135:2379", "--cert-file=/etc/kubernetes/pki/etcd/server.crt",
      "--client-cert-auth=true", "--data-dir=/var/lib/etcd", "--feature-gates=InitialCorruptCheck=true",
      "--initial-advertise-peer-urls=https://192.0.2.135:2380", "--initial-cluster=cp1=https://192.0.2.135:2380",
      "--key-file=/etc/kubernetes/pki/etcd/server.key",
      "--listen-client-urls=https://127.0.0.1:2379,https://192.0.2.135:2379", "--listen-metrics-urls=http://127.0.0.1:2381",
      "--listen-peer-urls=https://192.0.2.135:2380", "--name=cp1", "--peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt",
      "--peer-client-cert-auth=true", "--peer-key-file=/etc/kubernetes/pki/etcd/peer.key",
      "--peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt", "--snapshot-count=10000",
      "--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt", "--watch-progress-notify-interval=5s" }, { table.unpack(cmd_of(p)) })
    assert.equal("https://192.0.2.135:2379", p.metadata.annotations["kubeadm.kubernetes.io/etcd.advertise-client-urls"])
    local c = p.spec.containers[1]
    assert.equal("registry.k8s.io/etcd:3.6.6-0", c.image)
    assert.same({ requests = { cpu = "100m", memory = "100Mi" } }, c.resources)
    assert.same({ host = "127.0.0.1", path = "/livez", port = "probe-port", scheme = "HTTP" }, c.livenessProbe.httpGet)
    assert.equal("/readyz", c.startupProbe.httpGet.path)
    assert.equal(2381, c.ports[1].containerPort)
    assert.same({ { name = "etcd-certs", hostPath = { path = "/etc/kubernetes/pki/etcd", type = "DirectoryOrCreate" } },
      { name = "etcd-data", hostPath = { path = "/var/lib/etcd", type = "DirectoryOrCreate" } } }, { table.unpack(p.spec.volumes) })
    -- mounts in kubeadm's order (data, then certs; the reference kubeadm v1.35.4), volumes sorted
    assert.same({ { name = "etcd-data", mountPath = "/var/lib/etcd" },
      { name = "etcd-certs", mountPath = "/etc/kubernetes/pki/etcd" } }, { table.unpack(c.volumeMounts) })
  end)

  it("etcd and the API server on IPv6 bracket addresses and use ::1", function()
    local ctx = mkctx(root, "networking:\n  serviceSubnet: fd00::/108\n", "fd00::5")
    local a = args.parse(cmd_of(require("manifests.etcd").build(ctx)))
    assert.equal("https://[::1]:2379,https://[fd00::5]:2379", a["listen-client-urls"])
    assert.equal("http://[::1]:2381", a["listen-metrics-urls"])
    local api = require("manifests.apiserver").build(ctx)
    assert.equal("https://[::1]:2379", args.parse(cmd_of(api))["etcd-servers"])
    assert.equal("[fd00::5]:6443", api.metadata.annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"])
  end)

  it("external etcd: endpoints, files and an etcd-certs-N mount for a dir outside the standard ones", function()
    local p = require("manifests.apiserver").build(mkctx(root, [[
etcd:
  external:
    endpoints: [https://192.0.2.139:2379, https://192.0.2.140:2379]
    caFile: /opt/etcd/ca.crt
    certFile: /opt/etcd/client.crt
    keyFile: /opt/etcd/client.key
]]))
    local a = args.parse(cmd_of(p))
    assert.equal("https://192.0.2.139:2379,https://192.0.2.140:2379", a["etcd-servers"])
    assert.equal("/opt/etcd/ca.crt", a["etcd-cafile"])
    assert.equal("/opt/etcd/client.crt", a["etcd-certfile"])
    local vols = {}
    for _, v in ipairs(p.spec.volumes) do vols[v.name] = v.hostPath.path end
    assert.equal("/opt/etcd", vols["etcd-certs-0"])
  end)

  it("images follow imageRepository and kubernetesVersion; etcd's imageRepository/imageTag win", function()
    local ctx = mkctx(root, "imageRepository: reg.example/k8s\nkubernetesVersion: v1.35.1\n" ..
      "etcd:\n  local:\n    imageRepository: reg.example/etcd\n    imageTag: 3.6.7-0\n")
    assert.equal("reg.example/k8s/kube-scheduler:v1.35.1", require("manifests.scheduler").build(ctx).spec.containers[1].image)
    assert.equal("reg.example/etcd/etcd:3.6.7-0", require("manifests.etcd").build(ctx).spec.containers[1].image)
  end)

  it("writes 0600 atomically, reports changes and keeps a backup copy when asked", function()
    local m = require "manifests"
    local ctx = mkctx(root)
    local changed = m.create(ctx, "kube-scheduler")
    assert.is_true(changed)
    assert.equal(tonumber("600", 8), fs.stat("/etc/kubernetes/manifests/kube-scheduler.yaml").mode & tonumber("777", 8))
    assert.equal(tonumber("700", 8), fs.stat("/etc/kubernetes/manifests").mode & tonumber("777", 8))
    assert.is_false((m.create(ctx, "kube-scheduler")))
    local old = fs.read("/etc/kubernetes/manifests/kube-scheduler.yaml")
    local ctx2 = mkctx(root, "scheduler:\n  extraArgs:\n  - name: v\n    value: \"4\"\n")
    local c2, _, backup = m.create(ctx2, "kube-scheduler", { backup_dir = "/etc/kubernetes/tmp/backup" })
    assert.is_true(c2)
    assert.equal("/etc/kubernetes/tmp/backup/kube-scheduler.yaml", backup)
    assert.equal(old, fs.read(backup))
    assert.matches("--v=4", fs.read("/etc/kubernetes/manifests/kube-scheduler.yaml"), 1, true)
  end)
end)

describe("control-plane and etcd phases through the binary", function()
  local root
  before_each(function() root = h.tmpdir() end)
  after_each(function() h.rmrf(root) end)

  local cfg_text = HEAD:format("192.0.2.135") .. "kubernetesVersion: v1.35.4\nnetworking:\n  podSubnet: 10.244.0.0/16\n"
  local NOPROXY = "env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u NO_PROXY -u no_proxy "

  local function run(r)
    h.write(r .. "/kubeadm.yaml", cfg_text)
    for _, ph in ipairs { "control-plane all", "etcd local" } do
      local cmd = NOPROXY .. h.q(h.bin) .. " init phase " .. ph .. " --root " .. h.q(r) .. " --config " ..
        h.q(r .. "/kubeadm.yaml") .. " >/dev/null 2>&1"
      local ok = os.execute(cmd)
      assert.is_true(ok, cmd)
    end
  end

  it("the same config gives the same bytes, equal to the golden files", function()
    local r2 = h.tmpdir()
    run(root); run(r2)
    for _, c in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd" } do
      local a = h.read(root .. "/etc/kubernetes/manifests/" .. c .. ".yaml")
      local b = h.read(r2 .. "/etc/kubernetes/manifests/" .. c .. ".yaml")
      assert.truthy(a, c)
      assert.equal(a, b, c)
      local golden = dir .. "fixtures/golden/" .. c .. ".yaml"
      if os.getenv("UPDATE_GOLDEN") then h.write(golden, a) end
      assert.equal(h.read(golden), a, "golden " .. c)
      -- and it decodes as a Pod
      assert.equal("Pod", yaml.decode(a)[1].kind)
    end
    local st = io.popen("stat -c %a " .. h.q(root .. "/var/lib/etcd")):read("l")
    assert.equal("700", st)
    h.rmrf(r2)
  end)

  it("proxy variables go to the control-plane Pods, not etcd's (as the reference kubeadm v1.35.4)", function()
    -- (the test's own environment may hold other *_proxy variables: only these two are checked)
    h.write(root .. "/kubeadm.yaml", cfg_text)
    for _, ph in ipairs { { "control-plane", "apiserver" }, { "etcd", "local" } } do
      local code, out, err = h.moonadm({ "init", "phase", ph[1], ph[2], "--root", root, "--config", root .. "/kubeadm.yaml" },
        { HTTP_PROXY = "http://proxy.test:3128", all_proxy = "socks5://p.test", EMPTY_PROXY = "" })
      assert.equal(0, code, out .. err)
    end
    local function env(c) return yaml.decode(h.read(root .. "/etc/kubernetes/manifests/" .. c .. ".yaml"))[1].spec.containers[1].env end
    -- every non-empty *_proxy variable, any case, sorted (kubeadm's GetProxyEnvVars)
    local e = env("kube-apiserver")
    assert.same({ { name = "HTTP_PROXY", value = "http://proxy.test:3128" }, { name = "all_proxy", value = "socks5://p.test" } },
      { e[1], e[2] })
    assert.is_nil(env("etcd"))
  end)

  it("external etcd: etcd local writes no manifest", function()
    h.write(root .. "/k.yaml", HEAD:format("192.0.2.135") .. "etcd:\n  external:\n    endpoints: [https://192.0.2.139:2379]\n")
    local code, out = h.moonadm { "init", "phase", "etcd", "local", "--root", root, "--config", root .. "/k.yaml" }
    assert.equal(0, code)
    assert.matches("External etcd mode", out, 1, true)
    assert.is_nil(h.read(root .. "/etc/kubernetes/manifests/etcd.yaml"))
  end)
end)
