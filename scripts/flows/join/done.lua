-- The text a join prints when its whole flow succeeded, in kubeadm's words (cmd/kubeadm/app/cmd/
-- join.go: joinWorkerNodeDoneMsg, joinControlPlaneDoneTemp): scripts grep for its first line.
local nodeview = require "node.view"

local M = {}

local WORKER = [[

This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.

]]

local CONTROL_PLANE = [[

This node has joined the cluster and a new control plane instance was created:

* Certificate signing request was sent to apiserver and approval was received.
* The Kubelet was informed of the new secure connection details.
* Control plane label and taint were applied to the new node.
* The Kubernetes control plane instances scaled up.
%s

To start administering your cluster from this node, you need to run the following as a regular user:

	mkdir -p $HOME/.kube
	sudo cp -i %s $HOME/.kube/config
	sudo chown $(id -u):$(id -g) $HOME/.kube/config

Run 'kubectl get nodes' to see this node join the cluster.

]]

M.ADMIN_CONF = "/etc/kubernetes/admin.conf"

function M.text(ctx)
  if not nodeview.is_control_plane(ctx) then return WORKER end
  local external = ((ctx.cfg.cluster or {}).etcd or {}).external
  local etcd = external and "" or "* A new etcd member was added to the local/stacked etcd cluster."
  return CONTROL_PLANE:format(etcd, M.ADMIN_CONF)
end

return M
