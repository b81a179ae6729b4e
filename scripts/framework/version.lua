-- The scripts' version and the engine major.minor they were written for; the host refuses a
-- mismatch (bindings/main.c), so an old exported copy never runs against a newer engine.
return {
  scripts = "0.1.0",
  engine = "0.1",
}
