-- rotate-ca phase "preflight": this node runs a control plane (its kube-apiserver manifest is here,
-- or set aside by a run killed while its etcd restarted: the run's preparation puts it back).
local lazy = require "framework.lazy"
local nodeview = require "node.view"
local restart = lazy.require "renewal.restart"
return {
  name = "preflight",
  desc = "Check that this node runs a control plane",
  always_run = true,
  run = function(ctx)
    if not nodeview.runs_control_plane(ctx) and not ctx:exists(restart.ASIDE .. "/kube-apiserver.yaml") then
      error(("there is no %s: this node runs no control plane, and a CA rotation runs on the control planes")
        :format(nodeview.APISERVER_MANIFEST), 0)
    end
  end,
}
