// Text from outside (tags, marker lines, command arguments, CSV fields, scenario and ONNX names)
// made safe once, where it enters: every byte string jouleprof keeps is valid UTF-8, so JSON,
// SQLite and HTML writers never meet bytes they cannot encode.
#pragma once

#include <string>
#include <string_view>

namespace jouleprof {

/// Valid UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view s);

/// `s` with every invalid UTF-8 sequence replaced by U+FFFD; `replaced` tells whether any was.
std::string to_valid_utf8(std::string_view s, bool* replaced = nullptr);

/// A label (tag, name, CSV header): valid UTF-8 with C0/C1 control characters and DEL written
/// as \xNN, so that it prints as one line on a terminal and cannot move its cursor.
std::string clean_label(std::string_view s, bool* changed = nullptr);

/// One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or a line break.
std::string csv_field(std::string_view s);

/// For printing text that may hold control characters (a command's arguments) on a terminal:
/// valid UTF-8, controls escaped (\n, \t, \r, \e, \xNN); the stored text stays as it was.
std::string for_terminal(std::string_view s);

}  // namespace jouleprof
