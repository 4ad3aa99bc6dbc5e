// UTF-8 rules for the names scout copies out of a training process (job, host, GPU and
// communicator names) and prints: cut at a character boundary, and make valid before output.
// Used by the plugin (fixed-size name fields) and every reader of segments. Never allocates
// except for the returned string; never throws beyond std::bad_alloc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace scout {

// Length of the longest prefix of `s` of at most `max_bytes` bytes that does not end inside a
// multi-byte UTF-8 sequence (a cut there would leave an invalid tail). Bytes that are not UTF-8
// at all count as one character each.
size_t utf8_prefix_len(std::string_view s, size_t max_bytes);

// True if `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
bool utf8_valid(std::string_view s);

// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
std::string utf8_clean(std::string_view s);

// `s` as valid UTF-8 without control characters: what utf8_clean does, and every C0 control
// (newline and tab too unless `keep_lines`), DEL and C1 control replaced by U+FFFD. For names read
// from segments and stores (host, GPU, communicator, job), which must never carry a terminal
// escape sequence (ESC ... ) or a line break into `scout status`, logs or the Prometheus file.
std::string text_clean(std::string_view s, bool keep_lines = false);

// `s` made safe to print on a terminal or in a log line, injectively: a backslash becomes "\\",
// a byte that is not part of a well-formed UTF-8 sequence, an ASCII control character (0x00-0x1F,
// 0x7F: newline, ESC of an ANSI/OSC sequence) or a C1 control (U+0080-U+009F) becomes "\xNN" per
// byte; everything else is kept. What every printed name (segment, host, communicator,
// checkpoint path) goes through.
std::string printable(std::string_view s);

// True when printable(s) == s: valid UTF-8 without control characters or backslashes.
bool is_printable(std::string_view s);

}  // namespace scout
