# Read by cpack when it runs (CPACK_PROJECT_CONFIG_FILE): the package's
# version is the one the build stamped into pmon (pmon_version.txt, from
# git describe), not the one known when CMake configured the build.
if(EXISTS "${CPACK_PMON_VERSION_FILE}")
  file(STRINGS "${CPACK_PMON_VERSION_FILE}" CPACK_PACKAGE_VERSION LIMIT_COUNT 1)
  set(CPACK_DEBIAN_PACKAGE_VERSION "${CPACK_PACKAGE_VERSION}")
endif()
