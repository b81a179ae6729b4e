-- A whole cluster restored from a snapshot on the stand-in lab (e2erst, 10.253.39), etcdutl from
-- PATH: tests/e2e/restore_common.lua says what is checked.
require("restore_common")({ name = "e2erst", subnet = "10.253.39" }, _ENV)
