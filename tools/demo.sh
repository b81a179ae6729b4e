#!/usr/bin/env bash
# `make demo`: a lab cluster brought up by moonadm's stock init (and join) flows: real etcd,
# kube-apiserver, kube-controller-manager and kube-scheduler, each lab node in its own namespaces
# with its own containerd and the real kubelet (DEMO_KUBELET=standin: the lab's fast kubelet stand-in,
# no runtime, pods other than the static ones stay Pending). With the real kubelet it then runs a
# test pod on the worker and asks it for a page. It is left running; the end says how to use it and
# how to take it down. DEMO_CP / DEMO_WORKERS choose the size (1 + 1); DEMO_NAME (and DEMO_SUBNET, its
# /24 as three octets) give the lab its own name, so it can run beside others (CI's scratch-clone run
# uses one). `make demo` first installs missing Debian packages, builds bin/moonadm and the lab's binaries.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/bin/moonadm
kubelet=${DEMO_KUBELET:-real}
case $kubelet in real|standin) ;; *) echo "demo: DEMO_KUBELET=$kubelet: give real or standin" >&2; exit 2 ;; esac
cp=${DEMO_CP:-1} workers=${DEMO_WORKERS:-$([ "$kubelet" = real ] && echo 1 || echo 0)}
name=${DEMO_NAME:-} subnet=${DEMO_SUBNET:-}
[ -x "$bin" ] || { echo "demo: building bin/moonadm first"; make -C "$top" bin/moonadm; }
[ -x "$top/.lab/bin/kube-apiserver" ] || { echo "demo: building the lab's components first (make lab-bins)"; make -C "$top" lab-bins; }
if [ "$kubelet" = real ]; then make -C "$top" --no-print-directory lab-bins-node; fi
named=() up=()
[ -z "$name" ] || named=(--name "$name")
[ -z "$subnet" ] || up=(--subnet "$subnet")
echo "== moonadm $("$bin" version -o short): the init flow it runs (moonadm phases init)"
"$bin" phases init
echo
echo "== moonadm lab up --kubelet $kubelet --control-planes $cp --workers $workers${name:+ --name $name}${subnet:+ --subnet $subnet}"
"$bin" lab up --kubelet "$kubelet" --control-planes "$cp" --workers "$workers" ${named[@]+"${named[@]}"} ${up[@]+"${up[@]}"}
labdir=${name:-cluster}; [ "$labdir" != moonadm ] || labdir=cluster  # the default lab's name
# admin.conf (kubeadm:cluster-admins through RBAC), the day-to-day credential kubeadm points users
# to; super-admin.conf is its break-glass one.
kc=$top/.lab/$labdir/admin.conf
kubectl=$top/.lab/bin/kubectl
# The static Pods' mirror Pods turn Ready some seconds after the kubelet reports the Node: wait, so the
# tables below show the cluster settled rather than 0/1 just before it is.
if [ "$kubelet" = real ]; then
  "$kubectl" --kubeconfig "$kc" wait --for=condition=Ready node --all --timeout=180s >/dev/null
  "$kubectl" --kubeconfig "$kc" -n kube-system wait --for=condition=Ready pod -l tier=control-plane --timeout=180s >/dev/null
fi
echo
echo "== kubectl get nodes -o wide"
"$kubectl" --kubeconfig "$kc" get nodes -o wide
echo
echo "== kubectl get pods -A -o wide"
"$kubectl" --kubeconfig "$kc" get pods -A -o wide
echo
echo "== etcd members (etcdctl on cp1)"
"$bin" lab exec cp1 ${named[@]+"${named[@]}"} -- etcdctl --endpoints https://127.0.0.1:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt \
  --cert /etc/kubernetes/pki/etcd/healthcheck-client.crt --key /etc/kubernetes/pki/etcd/healthcheck-client.key \
  member list -w table
if [ "$kubelet" = real ]; then
  node=cp1; [ "$workers" -gt 0 ] && node=w1
  echo
  echo "== a test pod on $node: busybox httpd, asked for its page from cp1 over the pod network"
  "$kubectl" --kubeconfig "$kc" apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hello, namespace: default}
spec:
  nodeName: $node
  containers:
  - name: hello
    image: moonadm.lab/busybox:1.35.0
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "mkdir -p /www && echo \"hello from pod \$(hostname) on $node\" > /www/index.html && exec httpd -f -p 8080 -h /www"]
YAML
  "$kubectl" --kubeconfig "$kc" wait --for=condition=Ready pod/hello --timeout=120s
  ip=$("$kubectl" --kubeconfig "$kc" get pod hello -o jsonpath='{.status.podIP}')
  "$bin" lab exec cp1 ${named[@]+"${named[@]}"} -- busybox wget -q -O - "http://$ip:8080/"
fi
echo
"$bin" lab status ${named[@]+"${named[@]}"}
n=${name:+ --name $name}
cat <<TXT

The lab is running. Use it:
  $kubectl --kubeconfig $kc get pods -A
  $bin lab exec cp1$n -- moonadm certs check-expiration      # any command, as if on node cp1
  $bin lab status$n
Take it down:
  $bin lab down$n
TXT
