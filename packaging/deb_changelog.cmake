# Run by cpack after it has installed pmon into its staging directory
# (CPACK_PRE_BUILD_SCRIPTS): writes the changelog a Debian package carries,
# usr/share/doc/pmon/changelog.gz, for the version being packaged, dated
# SOURCE_DATE_EPOCH (the commit's time in a release build) or now.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
set(doc "${CPACK_TEMPORARY_INSTALL_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}/share/doc/pmon")
if(NOT IS_DIRECTORY "${doc}")
  message(FATAL_ERROR "deb_changelog.cmake: no ${doc} in the staging directory")
endif()
# RFC 5322 date, as Debian changelogs have it (CMake honours SOURCE_DATE_EPOCH).
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE "${doc}/changelog"
  "pmon (${CPACK_PACKAGE_VERSION}) unstable; urgency=medium\n\n"
  "  * pmon ${CPACK_PACKAGE_VERSION}. What changed is in the history of the\n"
  "    pmon source tree.\n\n"
  " -- ${CPACK_PACKAGE_CONTACT}  ${date}\n")
execute_process(COMMAND gzip -9nf "${doc}/changelog" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "deb_changelog.cmake: gzip failed (${rc})")
endif()
