#include <doctest/doctest.h>

#include <string>

#include "common/util/error.hpp"
#include "common/util/utf8.hpp"

using jobctl::util::is_utf8;
using jobctl::util::show_bytes;

TEST_CASE("utf8: well-formed text passes, every ill-formed sequence fails") {
  for (const char* good : {"", "plain", "caf\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF",
                           "\xED\x9F\xBF"}) {
    CAPTURE(good);
    CHECK(is_utf8(good));
  }
  for (const char* bad : {"a\xFF" "b", "\x80", "\xC0\xAF", "\xC3", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF0\x80\x80\xAF",
                          "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xE2\x82"}) {
    CAPTURE(show_bytes(bad));
    CHECK_FALSE(is_utf8(bad));
  }
}

TEST_CASE("utf8: a message shows the bytes that are not UTF-8 and keeps the rest") {
  CHECK(show_bytes("caf\xC3\xA9 a\xFF" "b") == "caf\xC3\xA9 a\\xFFb");
  CHECK(show_bytes("\xED\xA0\x80") == "\\xED\\xA0\\x80");  // a surrogate, byte by byte
  // A NUL is UTF-8, but what() would end a message at it.
  CHECK(show_bytes(std::string("a\0b", 3)) == "a\\x00b");
}

TEST_CASE("utf8: a NUL in an error's message or hint does not cut it short") {
  const jobctl::Error e(jobctl::ExitCode::usage, std::string("bad 'a\0b' here", 14), std::string("drop \0 it", 9));
  CHECK(std::string(e.what()) == "bad 'a\\x00b' here");
  CHECK(e.hint() == "drop \\x00 it");
}

TEST_CASE("utf8: every argument must be UTF-8 except the exempt flag's value") {
  const char* ok[] = {"jobctl", "--db", "/tmp/\xFF.db", "--db=/tmp/\xFE", "submit", "--", "echo", "caf\xC3\xA9"};
  CHECK_NOTHROW(jobctl::util::require_utf8_arguments(8, ok, "--db"));
  const char* bad[] = {"jobctl", "submit", "--name", "a\xFF" "b"};
  CHECK_THROWS_WITH_AS(jobctl::util::require_utf8_arguments(4, bad, "--db"),
                       doctest::Contains("argument 'a\\xFFb' is not valid UTF-8"), jobctl::Error);
}

TEST_CASE("utf8: one line shows control characters, C1 ones too, and keeps other text") {
  using jobctl::util::one_line;
  CHECK(one_line("a\nb\rc\td") == "a\\nb\\rc\\x09d");
  CHECK(one_line("nightly\x1B]0;owned\x07\x1B[2J") == "nightly\\x1B]0;owned\\x07\\x1B[2J");
  CHECK(one_line("\xC2\x9B" "2J") == "\\u009B2J");  // a CSI in one code point
  CHECK(one_line("caf\xC3\xA9 \xC2\xA0\xE2\x82\xAC") == "caf\xC3\xA9 \xC2\xA0\xE2\x82\xAC");  // not controls
}

TEST_CASE("utf8: the start of a character not yet whole is found at the end of text read so far") {
  using jobctl::util::incomplete_utf8_tail;
  CHECK(incomplete_utf8_tail("") == 0);
  CHECK(incomplete_utf8_tail("price: 5") == 0);
  CHECK(incomplete_utf8_tail("5\xE2\x82\xAC") == 0);  // a whole euro sign
  CHECK(incomplete_utf8_tail("5\xE2\x82") == 2);
  CHECK(incomplete_utf8_tail("5\xE2") == 1);
  CHECK(incomplete_utf8_tail("\xF0\x9F\x98") == 3);
  CHECK(incomplete_utf8_tail("caf\xC3") == 1);
  CHECK(incomplete_utf8_tail("a\x82\x82\x82") == 0);  // no lead byte within reach: not ours to hold
}

TEST_CASE("utf8: display width counts a CJK character or an emoji as two columns and a combining mark as none") {
  using jobctl::util::display_width;
  using jobctl::util::prefix_within;
  CHECK(display_width("nightly") == 7);
  CHECK(display_width("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E") == 6);   // 日本語
  CHECK(display_width("\xEB\xB0\xB1\xEC\x97\x85") == 4);               // 백업, Hangul
  CHECK(display_width("caf" "e\xCC\x81") == 4);                        // e and a combining acute
  CHECK(display_width("\xF0\x9F\x9A\x80 go") == 5);                    // 🚀 go
  CHECK(display_width("\xEF\xBC\xA1") == 2);                           // a fullwidth A
  CHECK(display_width("\xC3\xA9t\xC3\xA9") == 3);                      // été: one column each
  CHECK(display_width("a\xFF") == 2);                                  // a stray byte: one
  // Cut at a column count, never inside a wide character or before its mark.
  CHECK(prefix_within("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", 3) == 3);  // 日 (2 columns), not half of 本
  CHECK(prefix_within("e\xCC\x81x", 1) == 3);                          // é whole, with its mark
  CHECK(prefix_within("abc", 5) == 3);
}
