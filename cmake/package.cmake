# What `cmake --install` lays out beside the programs, and the Debian
# package made of it all (`cpack -G DEB` in a build tree; scripts/package
# builds it, checks it with lintian and, with --install, installs it).

# Man pages and the changelog (of a native package), compressed as Debian's policy wants
# them (gzip -9n: no name, no time stamp, so the same bytes every build).
# jobctl-serve's page points at jobctl(1), whose SERVE section it is.
set(generated ${PROJECT_BINARY_DIR}/generated)
file(WRITE ${generated}/jobctl-serve.1 ".so man1/jobctl.1\n")
set(compressed)
foreach(pair "man/jobctl.1;jobctl.1" "man/jobagent.8;jobagent.8" "${generated}/jobctl-serve.1;jobctl-serve.1"
             "packaging/deb/changelog;changelog")
  list(GET pair 0 source)
  list(GET pair 1 name)
  cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${PROJECT_SOURCE_DIR})
  add_custom_command(OUTPUT ${generated}/${name}.gz
    COMMAND gzip -9n -c ${source} > ${generated}/${name}.gz
    DEPENDS ${source} VERBATIM)
  list(APPEND compressed ${generated}/${name}.gz)
endforeach()
add_custom_target(compressed_docs ALL DEPENDS ${compressed})

install(FILES ${generated}/jobctl.1.gz ${generated}/jobctl-serve.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${generated}/jobagent.8.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${generated}/changelog.gz packaging/deb/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES completions/jobctl.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME jobctl)
install(FILES completions/jobctl.zsh DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions RENAME _jobctl)
install(FILES completions/jobctl.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)

# The systemd units, where systemd looks under the prefix
# (/usr/local/lib/systemd/system, /usr/lib/systemd/system), their
# ExecStart= naming the programs where this install put them.
set(units jobagent.service jobagent-webhooks.service jobctl-serve.service)
list(TRANSFORM units PREPEND scripts/ OUTPUT_VARIABLE unit_files)
install(FILES ${unit_files} DESTINATION lib/systemd/system)
install(CODE "
  foreach(unit ${units})
    set(path \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/\${unit}\")
    file(READ \"\${path}\" text)
    string(REPLACE \"/usr/local/bin/\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/\" text \"\${text}\")
    file(WRITE \"\${path}\" \"\${text}\")
  endforeach()")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME jobctl)
set(CPACK_PACKAGE_VENDOR "the jobctl developers")
set(CPACK_PACKAGE_CONTACT "jobctl developers <jobctl@jobctl.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed job scheduler: cron, queues, DAGs and retries")
# The extended description; CPack puts the summary above it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "jobctl submits, schedules and inspects jobs: shell commands and webhooks,
now, later or on a cron schedule in any time zone, with retries, a
dead-letter queue and DAGs; jobctl serve is its HTTP API and web console.
jobagent runs them on each host, claiming work from an embedded SQLite file
or a PostgreSQL server shared by a fleet.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libcurl is loaded with the agent's first webhook (dlopen), so
# dpkg-shlibdeps does not see it; webhooks are part of every agent.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, libcurl4 (>= 7.85)")
# The PostgreSQL client is jobctl's own module (lib/jobctl/). On x86-64 it
# opens libssl.so.3 at its first call (dlopen); libssl3 is in Depends all
# the same, through jobagent's libcrypto.so.3, which dpkg-shlibdeps finds.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS postgresql)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/deb/postinst
                                       ${PROJECT_SOURCE_DIR}/packaging/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES ON)
include(CPack)
