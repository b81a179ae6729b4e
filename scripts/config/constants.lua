-- kubeadm's defaults that every minor moonadm speaks shares, in one place (what changes from one
-- minor to the next, versions and image tags, is config.releases'). No value here is ever looked up
-- over the network.
local constants <const> = {
  image_repository = "registry.k8s.io",

  api_version = "kubeadm.k8s.io/v1beta4",
  api_version_v1beta3 = "kubeadm.k8s.io/v1beta3",
  kubelet_api_version = "kubelet.config.k8s.io/v1beta1",
  kubeproxy_api_version = "kubeproxy.config.k8s.io/v1alpha1",

  service_subnet = "10.96.0.0/12",
  dns_domain = "cluster.local",
  certificates_dir = "/etc/kubernetes/pki",
  ca_cert_path = "/etc/kubernetes/pki/ca.crt",
  cluster_name = "kubernetes",
  etcd_data_dir = "/var/lib/etcd",
  api_bind_port = 6443,
  image_pull_policy = "IfNotPresent",
  encryption_algorithm = "RSA-2048",
  certificate_validity = "8760h0m0s",
  ca_certificate_validity = "87600h0m0s",

  token_ttl = "24h0m0s",
  token_usages = { "signing", "authentication" },
  token_groups = { "system:bootstrappers:kubeadm:default-node-token" },

  timeouts = {
    controlPlaneComponentHealthCheck = "4m0s",
    kubeletHealthCheck = "4m0s",
    kubernetesAPICall = "1m0s",
    etcdAPICall = "2m0s",
    tlsBootstrap = "5m0s",
    discovery = "5m0s",
    upgradeManifests = "5m0s",
  },

  -- what `config print *-defaults` shows where a real value is only known at run time
  placeholder = {
    token = "abcdef.0123456789abcdef",
    advertise_address = "1.2.3.4",
    node_name = "node",
    cri_socket = "unix:///var/run/containerd/containerd.sock",
    api_server_endpoint = "kube-apiserver:6443",
  },
}

return constants
