-- `moonadm certs`: lands with its own issue; until then it says so and exits 3.
local errors = require "errors"

return {
  main = function(argv) errors.not_implemented("certs " .. table.concat(argv, " ")) end,
}
