# Read by ctest after the tests discovered in the test binaries: the
# longest start first (COST, about their seconds under the sanitizers), so
# that none of them ends a pass alone on a fresh tree, which has no timings
# of its own yet (ctest's own timings file cannot hold names with spaces).
# A name that matches no test is ignored.
foreach(long
    "90=schedule: kill -9 of the leader, twice, loses and doubles no occurrence of a per-second schedule"
    "300=hostile: every bad input gets its documented exit status, one error line, and writes nothing"
    "60=failover: jobctl and agents carry on when the synchronous standby is promoted"
    "60=dag: a 1,000-node layered DAG on two agents runs every node once, each after its parents"
    "30=fleet: a queue's --rate holds over 20 s"
    "30=fault: a step of the wall clock larger than the lease restarts no running job")
  string(FIND "${long}" "=" at)
  string(SUBSTRING "${long}" 0 ${at} cost)
  math(EXPR at "${at} + 1")
  string(SUBSTRING "${long}" ${at} -1 name)
  foreach(backend sqlite postgres)
    set_tests_properties("${name} [${backend}]" PROPERTIES COST ${cost})
  endforeach()
endforeach()

# The hostile inputs are thousands of commands. Under the sanitizers they
# took over 900 s (scripts/test's timeout for a hang) beside three more
# tests on two cores, until the sanitizer build stopped registering UBSan's
# records as globals (cmake/warnings.cmake): 146 s now, in a local run of
# .ci/run. They keep 1800 s, for a slower machine.
foreach(backend sqlite postgres)
  set_tests_properties("hostile: every bad input gets its documented exit status, one error line, and writes nothing [${backend}]"
    PROPERTIES TIMEOUT 1800)
endforeach()
