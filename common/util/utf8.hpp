#pragma once
// UTF-8, the only text jobctl keeps: the store holds JSON and text columns,
// which cannot carry other bytes, so text that is not UTF-8 is refused
// where a user gives it, with exit 2, instead of failing deep inside.
#include <string>
#include <string_view>

namespace jobctl::util {

// Whether `text` is well-formed UTF-8: no stray continuation bytes,
// overlong forms, surrogates or code points past U+10FFFF.
bool is_utf8(std::string_view text);

// `text` for a message: each byte outside well-formed UTF-8 as \xHH, and
// a NUL as \x00 (an exception's what() would end at it).
std::string show_bytes(std::string_view text);
// `text` as one line of a terminal: show_bytes, and control characters too
// (a newline as \n, a carriage return as \r, others as \xHH, C1 controls
// as \u0080..\u009F), so a value quoted in an error or shown in a table
// cannot break it over lines, redraw the terminal or retitle it.
std::string one_line(std::string_view text);

// The columns `text` takes on a terminal: an East Asian wide or fullwidth
// character (CJK, Hangul, most emoji) two, a combining mark or a
// zero-width character none, any other character (or a byte that is not
// UTF-8) one.
size_t display_width(std::string_view text);
// The longest start of `text` that takes at most `columns`, in bytes (never
// inside a character, nor between one and its combining marks).
size_t prefix_within(std::string_view text, size_t columns);

// How many bytes at the end of `text` begin a UTF-8 character that is not
// whole yet (0 to 3): output read as it comes may stop inside one.
size_t incomplete_utf8_tail(std::string_view text);

// Throws Error(usage) when an argument of a program's command line is not
// UTF-8, naming it; the value of `exempt` (a flag taking a path, such as
// --db) may be any bytes.
void require_utf8_arguments(int argc, const char* const* argv, std::string_view exempt);

}  // namespace jobctl::util
