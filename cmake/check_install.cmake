# ctest: `cmake --install` puts the binaries, man pages and completions in
# the usual places. Run with -DBUILD_DIR=… -DPREFIX=….
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(f bin/jobctl bin/jobctl-serve bin/jobagent share/man/man1/jobctl.1 share/man/man8/jobagent.8
          share/bash-completion/completions/jobctl share/zsh/site-functions/_jobctl
          share/fish/vendor_completions.d/jobctl.fish share/doc/jobctl/examples/jobagent.service
          share/doc/jobctl/examples/jobagent-webhooks.service share/doc/jobctl/examples/jobctl-serve.service)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "missing after install: ${f}")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
message(STATUS "install layout ok")
