// doctest's main, plus a listener that records failed assertions so test
// directories and databases can be kept for a failed test, and counts the
// test cases run: ctest names one per process, and a name doctest does not
// match (a ';' in it splits the name in CMake) must fail, not pass empty.
//
// A PostgreSQL test run with no server given (JOBCTL_TEST_PG_DSN unset)
// is skipped with one line saying so (exit 77, which ctest reports as
// skipped), unless JOBCTL_TEST_REQUIRE_POSTGRES=1, as scripts/test and CI
// set it: there it fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
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

namespace {

constexpr int kSkipped = 77;  // SKIP_RETURN_CODE in tests/CMakeLists.txt

bool set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

bool listing(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).starts_with("--list") || std::string_view(argv[i]).starts_with("-l")) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const char* backend = std::getenv("JOBCTL_TEST_BACKEND");
  if (backend && std::string_view(backend) == "postgres" && !set("JOBCTL_TEST_PG_DSN") && !listing(argc, argv)) {
    if (set("JOBCTL_TEST_REQUIRE_POSTGRES")) {
      std::fprintf(stderr, "JOBCTL_TEST_PG_DSN is not set, and this run requires the PostgreSQL tests "
                           "(JOBCTL_TEST_REQUIRE_POSTGRES): scripts/test starts a server\n");
      return 1;
    }
    std::fprintf(stderr, "skipped: no PostgreSQL server given; set JOBCTL_TEST_PG_DSN, or run scripts/test, "
                         "which starts one\n");
    return kSkipped;
  }
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
