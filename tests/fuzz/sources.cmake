# The sources the fuzz targets are built from: the parsers and what they
# need, not the whole of pmon_lib. Read by tests/fuzz/CMakeLists.txt (the
# libFuzzer build) and by tests/CMakeLists.txt, where the same targets are
# built with the project's compiler and replay their seed corpus: a source
# missing here fails the plain build's tests, not only the fuzz run.
set(PMON_FUZZ_SOURCES
  src/serve/jsonrpc.cpp
  src/serve/fields.cpp
  src/jobs/job_api.cpp
  src/serve/protocol.cpp
  src/serve/mcp.cpp
  src/serve/mcp_session.cpp
  src/serve/mcp_tasks.cpp
  src/jobs/json_text.cpp
  src/serve/harness.cpp
  src/core/units.cpp
  src/core/session_config.cpp
  src/core/printable.cpp
  src/core/end_words.cpp
  src/confine/envelope.cpp
  src/confine/error.cpp)
list(TRANSFORM PMON_FUZZ_SOURCES PREPEND "${PROJECT_SOURCE_DIR}/")
set(PMON_FUZZ_TARGETS fuzz_serve_request fuzz_mcp_message fuzz_hook_input fuzz_session_config)
