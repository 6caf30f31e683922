# Writes the man pages into OUT_DIR: pmon(1), written by hand (man/pmon.1,
# its @VERSION@ and @DATE@ filled in), and one page per subcommand from the
# --help texts of the pmon executable PMON (what --help says is what the
# page says). The subcommands are those 'pmon --help' names: "  pmon NAME"
# and "/ NAME ARG" on its usage lines. Run as cmake -P at build time; GZIP,
# when set, compresses each page. The date is SOURCE_DATE_EPOCH's when set
# (help2man reads it too), so a release build makes the same bytes. OUT_DIR/
# stamp lists the subcommands.
cmake_minimum_required(VERSION 3.25)
foreach(var PMON HELP2MAN VERSION_FILE PAGE_DIR OUT_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "pmon_man.cmake: ${var} is not set")
  endif()
endforeach()

file(STRINGS "${VERSION_FILE}" VERSION LIMIT_COUNT 1)
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR})
execute_process(COMMAND ${PMON} --help OUTPUT_VARIABLE usage RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pmon --help failed (${rc})")
endif()

# One page: NAME is the manual page's name, WHAT the help text's first line.
function(pmon_man_page name help_option what)
  string(REGEX REPLACE "[.]$" "" what "${what}")
  string(SUBSTRING "${what}" 0 1 first)
  string(SUBSTRING "${what}" 1 -1 rest)
  string(TOLOWER "${first}" first)
  execute_process(
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr
            "--version-string=${name} (pmon) ${VERSION}"
            "--help-option=${help_option}"
            "--name=${first}${rest}"
            --include=${PAGE_DIR}/subcommand.h2m
            --output=${OUT_DIR}/${name}.1 ${PMON}
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man failed for ${name} (${rc})")
  endif()
  # Debian installs man pages compressed; -n keeps the output reproducible.
  if(GZIP)
    execute_process(COMMAND ${GZIP} -9nf ${OUT_DIR}/${name}.1 RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "gzip failed for ${name}.1 (${rc})")
    endif()
  endif()
endfunction()

# pmon(1), the written page.
string(TIMESTAMP date "%Y-%m-%d" UTC)
file(READ ${PAGE_DIR}/pmon.1 page)
string(REPLACE "@VERSION@" "${VERSION}" page "${page}")
string(REPLACE "@DATE@" "${date}" page "${page}")
file(WRITE ${OUT_DIR}/pmon.1 "${page}")
if(GZIP)
  execute_process(COMMAND ${GZIP} -9nf ${OUT_DIR}/pmon.1 RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip failed for pmon.1 (${rc})")
  endif()
endif()

string(REGEX MATCHALL "(\n  pmon [a-z][a-z-]*| / [a-z][a-z-]* [A-Z])" lines "${usage}")
set(seen "")
foreach(line ${lines})
  string(REGEX REPLACE "^(\n  pmon | / )" "" sub "${line}")
  string(REGEX REPLACE " [A-Z]$" "" sub "${sub}")
  if(sub IN_LIST seen)
    continue()
  endif()
  list(APPEND seen ${sub})
  execute_process(COMMAND ${PMON} ${sub} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pmon ${sub} --help failed (${rc})")
  endif()
  string(REGEX MATCH "^[^\n]*" what "${help}")
  pmon_man_page(pmon-${sub} "${sub} --help" "${what}")
endforeach()
file(WRITE ${OUT_DIR}/stamp "${seen}\n")
