# Warnings and sanitizers as INTERFACE targets: every target of ours links
# jobctl_build_flags, so one switch changes the whole tree. The warnings
# alone are jobctl_warnings, for the PostgreSQL client module, which is
# loaded into programs of either kind and so takes no sanitizer of its own.
add_library(jobctl_warnings INTERFACE)
target_compile_options(jobctl_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
  -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
  -Wimplicit-fallthrough)
if(JOBCTL_WERROR)
  target_compile_options(jobctl_warnings INTERFACE -Werror)
endif()
# A unity build (scripts/test's trees) compiles a target's files a batch at
# a time, each .cpp included into one: GCC's warning for a class whose
# member's type is in an anonymous namespace is meant for headers, and
# fires on every such .cpp there.
if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(jobctl_warnings INTERFACE -Wno-subobject-linkage)
endif()
add_library(jobctl_build_flags INTERFACE)
target_link_libraries(jobctl_build_flags INTERFACE jobctl_warnings)
if(JOBCTL_SANITIZE)
  target_compile_options(jobctl_build_flags INTERFACE -fsanitize=address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  # Not position-independent: UBSan's per-check data at -O0 is about 70 MB of
  # pointers, which a PIE relocates at every start (0.5 s per jobctl call,
  # half of it in the loader); a fixed-address binary starts in half that.
  target_link_options(jobctl_build_flags INTERFACE -fsanitize=address,undefined -no-pie)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC gave each of those records (1.1 million in jobctl) an ASan redzone
    # and registered it as a global at every start, and LSan scanned them
    # all (158 MB) at every exit: 0.38 s of CPU per jobctl call, thousands
    # of calls in the suite. Without global redzones, and with the records
    # of the template copies the linker drops dropped too, jobctl --version
    # takes 0.07 s. Overflows of a global array are then the fuzzers' to
    # find (clang's ASan, which keeps them).
    target_compile_options(jobctl_build_flags INTERFACE --param=asan-globals=0
      -ffunction-sections -fdata-sections)
    target_link_options(jobctl_build_flags INTERFACE -Wl,--gc-sections)
    # The runtimes linked in rather than loaded: each sanitized process
    # (thousands of jobctl calls in the suite) then starts and exits in
    # three quarters of the CPU: jobctl submit took 108 ms of CPU with
    # leak checks, 79 ms linked so (perf stat -r 20), LSan's exit scan
    # alone 44 ms against 22.
    target_link_options(jobctl_build_flags INTERFACE -static-libasan -static-libubsan)
    # Linked by lld where it is installed (scripts/install-deps): GNU ld
    # took 15.1 s to link this tree's jobctl, lld 2.7 s, and there are
    # eight such programs. The plain tree, which ships, keeps GNU ld.
    find_program(JOBCTL_LLD ld.lld)
    if(JOBCTL_LLD)
      target_link_options(jobctl_build_flags INTERFACE -fuse-ld=lld)
    endif()
  endif()
endif()
# Fuzzing: the library gets coverage for libFuzzer to steer by, and the
# sanitizers; the fuzz targets add the fuzzer's main (tests/fuzz). Bounds
# checks in the standard library turn a read one past a string_view's end,
# which ASan cannot see, into a finding.
if(JOBCTL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "JOBCTL_FUZZ needs clang: configure with CXX=clang++-14")
  endif()
  target_compile_options(jobctl_build_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS)
  target_link_options(jobctl_build_flags INTERFACE -fsanitize=address,undefined)
endif()
target_include_directories(jobctl_build_flags INTERFACE ${PROJECT_SOURCE_DIR})
# The C++ runtime linked into jobctl, jobagent and the PostgreSQL client
# module rather than loaded: libstdc++.so's relocations and libgcc_s's
# constructor (its CPUID instructions trap to the hypervisor on a VM) were
# about 0.4 ms of every command. Not under the sanitizers, whose runtimes
# expect the shared one, nor for jobctl-serve and the tests, which link
# other C++ libraries (cpp-httplib, doctest) built against it.
add_library(jobctl_static_runtime INTERFACE)
if(NOT JOBCTL_SANITIZE AND NOT JOBCTL_FUZZ)
  target_link_options(jobctl_static_runtime INTERFACE -static-libstdc++ -static-libgcc)
endif()
target_compile_definitions(jobctl_build_flags INTERFACE
  JOBCTL_VERSION="${PROJECT_VERSION}")
