-- CA rotation on the stand-in lab (e2erot, 10.252.61): tests/e2e/rotate_common.lua says what is checked.
require("rotate_common")({ name = "e2erot", subnet = "10.252.61" }, _ENV)
