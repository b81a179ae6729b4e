-- Lost-quorum recovery on the real-kubelet lab (e2ercreal, 10.253.43): containerd, the real kubelet,
-- three control planes and a worker; tests/e2e/recover_common.lua says what is checked.
require("recover_common")({ name = "e2ercreal", subnet = "10.253.43", real = true }, _ENV)
