-- The name moonadm answers to. Installed as `kubeadm` (the .deb's update-alternatives link, or any
-- link by that name) it prints what tools parse from kubeadm in kubeadm's words: `version` in its
-- shape, the join command as `kubeadm join` (Cluster API and kubespray run `kubeadm`; scripts read both).
local M = { name = "moonadm" }

-- argv0: the program's argv[0] (nil when run from a spec); only the base name counts.
function M.set(argv0)
  local base = type(argv0) == "string" and argv0:match("([^/]+)$")
  M.name = base == "kubeadm" and "kubeadm" or "moonadm"
end

function M.as_kubeadm() return M.name == "kubeadm" end

return M
