-- A whole cluster restored from a snapshot on the real-kubelet lab (e2erreal, 10.253.40): containerd,
-- the real kubelet, etcdutl from the etcd image as a static Pod, a Pod on the worker Running
-- throughout the restore and after: tests/e2e/restore_common.lua says what is checked.
require("restore_common")({ name = "e2erreal", subnet = "10.253.40", real = true, etcdutl = "image" }, _ENV)
