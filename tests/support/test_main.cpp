// doctest's main, plus a listener that records failed assertions so test
// directories and databases can be kept for a failed test, and counts the
// test cases run: ctest names one per process, and a name doctest does not
// match (a ';' in it splits the name in CMake) must fail, not pass empty.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace jobctl::test {
void note_failure();
}

namespace {

int test_cases_started = 0;

struct FailureListener : doctest::IReporter {
  explicit FailureListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++test_cases_started; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override { jobctl::test::note_failure(); }
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& a) override {
    if (a.m_failed) jobctl::test::note_failure();
  }
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

DOCTEST_REGISTER_LISTENER("failures", 1, FailureListener);

int main(int argc, char** argv) {
  doctest::Context ctx(argc, argv);
  int rc = ctx.run();
  bool filtered = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    filtered = filtered || a.starts_with("--test-case=") || a.starts_with("-tc=");
  }
  if (rc == 0 && filtered && test_cases_started == 0 && !ctx.shouldExit()) {
    std::fprintf(stderr, "no test case matched the --test-case filter\n");
    return 1;
  }
  return rc;
}
