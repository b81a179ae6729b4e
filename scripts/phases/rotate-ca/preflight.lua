-- rotate-ca phase "preflight": this node runs a control plane (its CA files are here).
local nodeview = require "node.view"
return {
  name = "preflight",
  desc = "Check that this node runs a control plane",
  always_run = true,
  run = function(ctx)
    if not nodeview.runs_control_plane(ctx) then
      error(("%s has no kube-apiserver manifest: a CA rotation runs on the control planes"):format(nodeview.APISERVER_MANIFEST), 0)
    end
  end,
}
