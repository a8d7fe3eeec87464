# ctest: `cmake --install` puts the binaries, man pages and completions in
# the usual places. Run with -DBUILD_DIR=… -DPREFIX=….
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(f bin/jobctl bin/jobctl-serve bin/jobagent share/man/man1/jobctl.1.gz share/man/man1/jobctl-serve.1.gz
          share/man/man8/jobagent.8.gz share/bash-completion/completions/jobctl share/zsh/site-functions/_jobctl
          share/fish/vendor_completions.d/jobctl.fish share/doc/jobctl/copyright lib/jobctl/libjobctl-postgres.so
          lib/systemd/system/jobagent.service lib/systemd/system/jobagent-webhooks.service
          lib/systemd/system/jobctl-serve.service)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "missing after install: ${f}")
  endif()
endforeach()
# The programs are installed stripped: no symbol table, no debug information.
foreach(f bin/jobctl bin/jobctl-serve bin/jobagent)
  execute_process(COMMAND readelf -S "${PREFIX}/${f}" OUTPUT_VARIABLE sections RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR sections MATCHES "\\.symtab|\\.debug_")
    message(FATAL_ERROR "not stripped after install: ${f}")
  endif()
endforeach()
# The installed jobctl loads its PostgreSQL client module, not the
# system's libpq.so.5 (the loader's LD_DEBUG=files names each file it
# opens), and reports what the server does: nothing listens on port 1.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env LD_DEBUG=files
                        "${PREFIX}/bin/jobctl" --db "host=127.0.0.1 port=1 user=jobctl dbname=jobctl" ls
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 5 OR NOT err MATCHES "Connection refused" OR NOT err MATCHES "file=${PREFIX}/lib/jobctl/libjobctl-postgres.so"
   OR err MATCHES "file=[^ ]*libpq.so.5")
  message(FATAL_ERROR "the installed jobctl did not reach PostgreSQL through its module (exit ${rc}): ${err}")
endif()
# The units name the programs where they were installed.
file(READ "${PREFIX}/lib/systemd/system/jobagent.service" unit)
if(NOT unit MATCHES "ExecStart=${PREFIX}/bin/jobagent ")
  message(FATAL_ERROR "jobagent.service does not start ${PREFIX}/bin/jobagent")
endif()
file(REMOVE_RECURSE "${PREFIX}")
message(STATUS "install layout ok")
