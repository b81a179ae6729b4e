/* libFuzzer: tests/fuzz/lua/clusterinfo_body.lua inside the moonadm host (see fuzz_lua.h). */
#define FUZZ_LUA "clusterinfo_body"
#include "fuzz_lua.h"
