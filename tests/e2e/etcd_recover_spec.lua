-- Lost-quorum recovery on the stand-in lab (e2erec, 10.253.38): tests/e2e/recover_common.lua says what
-- is checked.
require("recover_common")({ name = "e2erec", subnet = "10.253.38" }, _ENV)
