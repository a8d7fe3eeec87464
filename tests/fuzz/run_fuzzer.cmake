# ctest: runs one libFuzzer target for SECONDS over a fresh copy of its seed
# corpus, so the checked-in corpus is never written and every run starts
# from it. Run with -DFUZZER=… -DSEEDS=… -DDICT=… -DWORK=… -DSECONDS=….
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/artifacts")
file(COPY "${SEEDS}/" DESTINATION "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -max_len=4096
          -dict=${DICT} -artifact_prefix=${WORK}/artifacts/ -print_final_stats=1 "${WORK}/corpus"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found "${WORK}/artifacts/*")
  message(FATAL_ERROR "the fuzzer found a problem (exit ${rc}): ${found}\n"
                      "reproduce it with: ${FUZZER} ${found}")
endif()
