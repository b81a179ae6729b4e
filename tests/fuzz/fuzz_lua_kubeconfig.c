/* libFuzzer: tests/fuzz/lua/kubeconfig.lua inside the moonadm host (see fuzz_lua.h). */
#define FUZZ_LUA "kubeconfig"
#include "fuzz_lua.h"
