-- Running a command "on" a lab node, as `lab up`'s init and joins and `lab exec` do: in its network
-- namespace with its root's node dirs at their / paths, and with the node runtime a real node of its
-- kind would have (the environment variable MOONADM_NODE_RUNTIME).
local core = require "moonadm.core"
local net = require "lab.net"
local node_start = require "lab.node_start"
local proc = require "moonadm.proc"

local M = {}

-- This process's environment for a command on a node: extra ("NAME=value") replaces the variables
-- it names, MOONADM_NODE_RUNTIME says runtime (default lab).
local function node_env(extra, runtime)
  local env, replaced = {}, { MOONADM_NODE_RUNTIME = true }
  for _, e in ipairs(extra or {}) do replaced[e:match("^([^=]+)=")] = true end
  for _, e in ipairs(core.environ()) do
    if not replaced[e:match("^([^=]+)=") or ""] then env[#env + 1] = e end
  end
  env[#env + 1] = "MOONADM_NODE_RUNTIME=" .. (runtime or "lab")
  for _, e in ipairs(extra or {}) do env[#env + 1] = e end
  return env
end

-- Runs argv "on" a node: its network namespace, its root's node dirs at their / paths.
-- On a real-kubelet node: inside the namespaces of its init (network, mount, UTS, PID), with the
-- lab's systemctl first on PATH and the systemd node runtime, as on a real node.
-- → the command's exit code.
function M.exec_on(st, node, argv, opts)
  opts = opts or {}
  if argv[1] == "moonadm" then argv[1] = core.exe() end
  local bin = st.bin_dir
  local path_env = "PATH=" .. bin .. ":" .. (os.getenv("PATH") or "/usr/bin:/bin")
  local pid, err
  if st.kubelet == "real" then
    local full = { "nsenter", "-t", tostring(math.tointeger(node.init_pid)), "-n", "-m", "-u", "-p",
      "--wd=" .. (os.getenv("PWD") or "/"), "--" }
    for _, a in ipairs(argv) do full[#full + 1] = a end
    pid, err = proc.spawn { argv = full, log = opts.log, env = node_env({ "PATH=" .. st.dir .. "/sbin:" .. bin .. ":" ..
      (os.getenv("PATH") or "/usr/sbin:/usr/bin:/sbin:/bin") }, "systemd") }
  else
    pid, err = proc.spawn { argv = argv, netns = net.netns_path(node.name, st.name), mounts = node_start.mounts(node.root),
      env = node_env { path_env, "MOONADM_LAB_BIN=" .. bin }, cwd = os.getenv("PWD"), log = opts.log }
  end
  if not pid then error(err, 0) end
  local _, code = proc.wait(pid)
  return code
end

return M
