# Writes the man pages of pmon and of each of its subcommands into OUT_DIR,
# from the --help texts of the pmon executable PMON (one source: what
# --help says is what the man page says). The subcommands are the
# "  pmon NAME" lines of 'pmon --help'. Run as cmake -P at build time;
# GZIP, when set, compresses each page. OUT_DIR/stamp lists the subcommands.
cmake_minimum_required(VERSION 3.25)
foreach(var PMON HELP2MAN VERSION OUT_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "pmon_man.cmake: ${var} is not set")
  endif()
endforeach()

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

string(REGEX MATCH "^pmon - ([^\n]*)" _ "${usage}")
pmon_man_page(pmon --help "${CMAKE_MATCH_1}")
string(REGEX MATCHALL "\n  pmon [a-z][a-z-]*" lines "${usage}")
set(seen "")
foreach(line ${lines})
  string(REGEX REPLACE "\n  pmon " "" sub "${line}")
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
