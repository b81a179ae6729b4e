-- kubeconfig parsing (admin.conf, kubelet.conf, a discovery file): parse, never read another file.
local kubeconfig = require "kube.kubeconfig"
return function(text)
  kubeconfig.parse(text, { filename = "fuzz.conf", read = function() return nil, "no file in the fuzzer" end })
end
