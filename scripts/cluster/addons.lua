-- The essential addons as kubeadm v1.35 creates them (phases/addons/dns and proxy manifests, held
-- against `kubeadm init phase addon ... --print-manifest`): CoreDNS (ServiceAccount, ClusterRole
-- and binding system:coredns, ConfigMap coredns with the Corefile, Deployment coredns — patch
-- target corednsdeployment — and Service kube-dns) and kube-proxy (ServiceAccount, the
-- kubeadm:node-proxier binding, Role/RoleBinding kube-proxy for its ConfigMap, ConfigMap
-- kube-proxy with config.conf and kubeconfig.conf, DaemonSet kube-proxy).
local images = require "config.images"
local yaml = require "moonadm.yaml"
local C = require "config.constants"
local releases = require "config.releases"
local log = require "framework.log"
local util = require "framework.util"
local capi = require "cluster.api"
local shape = require "kube.shape"
local cadmin = require "cluster.admin"
local rbac = require "cluster.rbac"
local nodeview = require "node.view"
local up = require "cluster.upload_config"
local kubelet_config = require "kubelet.config"
local patches = require "manifests.patches"

local M = {}

local NS = "kube-system"

local function sa(name) return { apiVersion = "v1", kind = "ServiceAccount", metadata = { name = name, namespace = NS } } end

function M.corefile(domain)
  return ([[
.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes %s in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success %s
       disable denial %s
    }
    loop
    reload
    loadbalance
}
]]):format(domain, domain, domain)
end

function M.coredns_deployment(cluster, replicas)
  local labels = { ["k8s-app"] = "kube-dns" }
  return {
    apiVersion = "apps/v1", kind = "Deployment",
    metadata = { name = "coredns", namespace = NS, labels = util.deepcopy(labels) },
    spec = {
      replicas = replicas or 2,
      strategy = { type = "RollingUpdate", rollingUpdate = { maxUnavailable = 1 } },
      selector = { matchLabels = util.deepcopy(labels) },
      template = {
        metadata = { labels = util.deepcopy(labels) },
        spec = {
          priorityClassName = "system-cluster-critical",
          serviceAccountName = "coredns",
          affinity = { podAntiAffinity = { preferredDuringSchedulingIgnoredDuringExecution = { {
            weight = 100,
            podAffinityTerm = { labelSelector = { matchExpressions = { { key = "k8s-app", operator = "In", values = { "kube-dns" } } } },
              topologyKey = "kubernetes.io/hostname" } } } } },
          tolerations = { { key = "CriticalAddonsOnly", operator = "Exists" },
            { key = "node-role.kubernetes.io/control-plane", effect = "NoSchedule" } },
          nodeSelector = { ["kubernetes.io/os"] = "linux" },
          containers = { {
            name = "coredns", image = images.coredns(cluster), imagePullPolicy = "IfNotPresent",
            resources = { limits = { memory = "170Mi" }, requests = { cpu = "100m", memory = "70Mi" } },
            args = { "-conf", "/etc/coredns/Corefile" },
            volumeMounts = { { name = "config-volume", mountPath = "/etc/coredns", readOnly = true } },
            ports = {
              { containerPort = 53, name = "dns", protocol = "UDP" },
              { containerPort = 53, name = "dns-tcp", protocol = "TCP" },
              { containerPort = 9153, name = "metrics", protocol = "TCP" },
              { containerPort = 8080, name = "liveness-probe", protocol = "TCP" },
              { containerPort = 8181, name = "readiness-probe", protocol = "TCP" },
            },
            livenessProbe = { httpGet = { path = "/health", port = "liveness-probe", scheme = "HTTP" },
              initialDelaySeconds = 60, timeoutSeconds = 5, successThreshold = 1, failureThreshold = 5 },
            readinessProbe = { httpGet = { path = "/ready", port = "readiness-probe", scheme = "HTTP" } },
            securityContext = { allowPrivilegeEscalation = false,
              capabilities = { add = { "NET_BIND_SERVICE" }, drop = { "ALL" } }, readOnlyRootFilesystem = true },
          } },
          dnsPolicy = "Default",
          volumes = { { name = "config-volume", configMap = { name = "coredns",
            items = { { key = "Corefile", path = "Corefile" } } } } },
        },
      },
    },
  }
end

-- The DNS service IP: the 10th address of the (first) service subnet.
function M.dns_ip(cluster)
  local subnet = ((cluster.networking or {}).serviceSubnet or C.service_subnet):match("^[^,]+")
  local ip, err = kubelet_config.nth_ip(subnet, 10)
  if not ip then error("the DNS service IP: " .. err, 0) end
  return ip
end

function M.coredns_objects(cluster, replicas)
  local domain = (cluster.networking or {}).dnsDomain or C.dns_domain
  return {
    sa("coredns"),
    { apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole", metadata = { name = "system:coredns" },
      rules = { rbac.rule({ "" }, { "endpoints", "services", "pods", "namespaces" }, { "list", "watch" }),
        rbac.rule({ "discovery.k8s.io" }, { "endpointslices" }, { "list", "watch" }) } },
    rbac.cluster_role_binding("system:coredns", "system:coredns", { rbac.sa("coredns", NS) }),
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "coredns", namespace = NS },
      data = { Corefile = M.corefile(domain) } },
    M.coredns_deployment(cluster, replicas),
    { apiVersion = "v1", kind = "Service",
      metadata = { name = "kube-dns", namespace = NS,
        labels = { ["k8s-app"] = "kube-dns", ["kubernetes.io/cluster-service"] = "true", ["kubernetes.io/name"] = "CoreDNS" },
        annotations = { ["prometheus.io/port"] = "9153", ["prometheus.io/scrape"] = "true" } },
      spec = { clusterIP = M.dns_ip(cluster),
        ports = { { name = "dns", port = 53, protocol = "UDP", targetPort = 53 },
          { name = "dns-tcp", port = 53, protocol = "TCP", targetPort = 53 },
          { name = "metrics", port = 9153, protocol = "TCP", targetPort = 9153 } },
        selector = { ["k8s-app"] = "kube-dns" } } },
  }
end

-- KubeProxyConfiguration as kubeadm serialises it: Go zero values, then kubeadm's defaults.
local function proxy_zero()
  local null = yaml.null
  return {
    apiVersion = C.kubeproxy_api_version, kind = "KubeProxyConfiguration",
    bindAddress = "", bindAddressHardFail = false,
    clientConnection = { acceptContentTypes = "", burst = 0, contentType = "", kubeconfig = "", qps = 0 },
    clusterCIDR = "", configSyncPeriod = "0s",
    conntrack = { maxPerCore = null, min = null, tcpBeLiberal = false, tcpCloseWaitTimeout = null,
      tcpEstablishedTimeout = null, udpStreamTimeout = "0s", udpTimeout = "0s" },
    detectLocal = { bridgeInterface = "", interfaceNamePrefix = "" },
    detectLocalMode = "", enableProfiling = false, healthzBindAddress = "", hostnameOverride = "",
    iptables = { localhostNodePorts = null, masqueradeAll = false, masqueradeBit = null, minSyncPeriod = "0s", syncPeriod = "0s" },
    ipvs = { excludeCIDRs = null, minSyncPeriod = "0s", scheduler = "", strictARP = false, syncPeriod = "0s",
      tcpFinTimeout = "0s", tcpTimeout = "0s", udpTimeout = "0s" },
    logging = { flushFrequency = 0, options = { json = { infoBufferSize = "0" }, text = { infoBufferSize = "0" } }, verbosity = 0 },
    metricsBindAddress = "", mode = "",
    nftables = { masqueradeAll = false, masqueradeBit = null, minSyncPeriod = "0s", syncPeriod = "0s" },
    nodePortAddresses = null, oomScoreAdj = null, portRange = "", showHiddenMetricsForVersion = "",
    winkernel = { enableDSR = false, forwardHealthCheckVip = false, networkName = "", rootHnsEndpointName = "", sourceVip = "" },
  }
end

local overlay = util.overlay

function M.proxy_config(cluster, user, advertise)
  local cfg = overlay(proxy_zero(), user or {})
  cfg.apiVersion, cfg.kind = C.kubeproxy_api_version, "KubeProxyConfiguration"
  if cfg.bindAddress == "" then cfg.bindAddress = (advertise and advertise:find(":", 1, true)) and "::" or "0.0.0.0" end
  local pod = (cluster.networking or {}).podSubnet
  if cfg.clusterCIDR == "" and pod and pod ~= "" then cfg.clusterCIDR = pod end
  if cfg.clientConnection.kubeconfig == "" then cfg.clientConnection.kubeconfig = "/var/lib/kube-proxy/kubeconfig.conf" end
  -- kubeadm v1.37 writes the default mode out (kube-proxy warns when none is set)
  if cfg.mode == "" then cfg.mode = releases.must(cluster.kubernetesVersion).proxy_mode end
  return cfg
end

function M.proxy_kubeconfig(server)
  return ([[apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: %s
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token]]):format(server)
end

-- user_supplied: whether the KubeProxyConfiguration is the user's (default: one was given); kubeadm
-- signs the ConfigMap of a generated one (component-config hash) and leaves the user's unsigned.
-- Both values end without a newline, as kubeadm's `|-` template writes them.
function M.proxy_objects(cluster, user, server, advertise, user_supplied)
  if user_supplied == nil then user_supplied = user ~= nil end
  local image = images.component(cluster, "kube-proxy")
  local labels = { ["k8s-app"] = "kube-proxy" }
  local cm = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "kube-proxy", namespace = NS, labels = { app = "kube-proxy" } },
    data = { ["kubeconfig.conf"] = M.proxy_kubeconfig(server),
      ["config.conf"] = (yaml.encode(M.proxy_config(cluster, user, advertise)):gsub("\n+$", "")) } }
  if not user_supplied then up.sign(cm) end
  return {
    sa("kube-proxy"),
    rbac.cluster_role_binding("kubeadm:node-proxier", "system:node-proxier", { rbac.sa("kube-proxy", NS) }),
    rbac.role(NS, "kube-proxy", { rbac.rule({ "" }, { "configmaps" }, { "get" }, { "kube-proxy" }) }),
    rbac.role_binding(NS, "kube-proxy", "kube-proxy", { rbac.group("system:bootstrappers:kubeadm:default-node-token") }),
    cm,
    { apiVersion = "apps/v1", kind = "DaemonSet",
      metadata = { name = "kube-proxy", namespace = NS, labels = util.deepcopy(labels) },
      spec = {
        selector = { matchLabels = util.deepcopy(labels) },
        updateStrategy = { type = "RollingUpdate" },
        template = {
          metadata = { labels = util.deepcopy(labels) },
          spec = {
            priorityClassName = "system-node-critical",
            containers = { {
              name = "kube-proxy", image = image, imagePullPolicy = "IfNotPresent",
              command = { "/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)" },
              securityContext = { privileged = true },
              volumeMounts = { { mountPath = "/var/lib/kube-proxy", name = "kube-proxy" },
                { mountPath = "/run/xtables.lock", name = "xtables-lock", readOnly = false },
                { mountPath = "/lib/modules", name = "lib-modules", readOnly = true } },
              env = { { name = "NODE_NAME", valueFrom = { fieldRef = { fieldPath = "spec.nodeName" } } } },
            } },
            hostNetwork = true,
            serviceAccountName = "kube-proxy",
            volumes = { { name = "kube-proxy", configMap = { name = "kube-proxy" } },
              { name = "xtables-lock", hostPath = { path = "/run/xtables.lock", type = "FileOrCreate" } },
              { name = "lib-modules", hostPath = { path = "/lib/modules" } } },
            tolerations = { { operator = "Exists" } },
            nodeSelector = { ["kubernetes.io/os"] = "linux" },
          },
        },
      },
    },
  }
end

-- --print-manifest: the objects as YAML documents, in the order kubeadm prints them; no API call.
local function print_manifest(objs)
  local yaml_ = yaml
  local out = {}
  for _, o in ipairs(objs) do out[#out + 1] = "---\n" .. yaml_.encode(o) end
  log.result(table.concat(out))
end

function M.coredns(ctx)
  local cluster = ctx.cfg.cluster
  if cluster.dns and cluster.dns.disabled then
    log.info("[addons] Skipping the CoreDNS addon: dns.disabled is set")
    return
  end
  if ctx.flags and ctx.flags["print-manifest"] then
    local o = M.coredns_objects(cluster)
    o[5] = patches.apply_for(ctx, "corednsdeployment", o[5])
    return print_manifest { o[5], o[4], o[6], o[2], o[3], o[1] }
  end
  local c = cadmin.client(ctx)
  local replicas
  if not ctx.dry_run then
    local live, err = capi.lookup(c, { apiVersion = "apps/v1", kind = "Deployment", namespace = NS, name = "coredns" })
    if err then error(("[addons] reading Deployment %s/coredns (its replicas are kept): %s"):format(NS, tostring(err)), 0) end
    local why
    replicas, why = shape.get(live, "spec.replicas", "number")
    if why then error(("[addons] Deployment %s/coredns as the API server answered it: %s"):format(NS, why), 0) end
  end
  local objs = M.coredns_objects(cluster, replicas and math.tointeger(replicas))
  objs[5] = patches.apply_for(ctx, "corednsdeployment", objs[5])
  for _, o in ipairs(objs) do capi.apply(ctx, c, o) end
  log.info("[addons] Applied essential addon: CoreDNS")
end

function M.kube_proxy(ctx)
  local cluster = ctx.cfg.cluster
  if cluster.proxy and cluster.proxy.disabled then
    log.info("[addons] Skipping the kube-proxy addon: proxy.disabled is set")
    return
  end
  local adv = nodeview.advertise_address(ctx)
  local server = nodeview.cpe_url(ctx)
  if ctx.flags and ctx.flags["print-manifest"] then
    -- kubeadm prints its template as rendered, before it signs the ConfigMap
    return print_manifest(M.proxy_objects(cluster, ctx.cfg.kubeproxy, server, adv, true))
  end
  local c = cadmin.client(ctx)
  for _, o in ipairs(M.proxy_objects(cluster, ctx.cfg.kubeproxy, server, adv, ctx.data.kubeproxy_user_supplied)) do
    capi.apply(ctx, c, o)
  end
  log.info("[addons] Applied essential addon: kube-proxy")
end

return M
