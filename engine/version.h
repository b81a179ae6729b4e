#ifndef MA_VERSION_H
#define MA_VERSION_H
/* The engine's version. The Lua scripts declare which engine major.minor they were written
 * for (scripts/framework/version.lua); the host refuses to run a mismatched pair. */
#define MA_ENGINE_VERSION "0.1.0"
#endif
