-- YAML config decoding: every kubeadm.k8s.io kind, defaulted and validated, as `init|join --config`.
local config = require "config"
local kinds = { "init", "join", "reset", "upgrade" }
return function(text)
  local kind = kinds[(#text % #kinds) + 1]
  config.load { text = text, filename = "fuzz.yaml", kind = kind, no_host_defaults = true }
end
