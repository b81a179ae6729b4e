-- CA rotation on the real-kubelet lab (e2erotreal, 10.253.61): containerd, the real kubelet, three
-- control planes and a worker; tests/e2e/rotate_common.lua says what is checked (and, here, every Node
-- Ready afterwards).
require("rotate_common")({ name = "e2erotreal", subnet = "10.253.61", real = true }, _ENV)
