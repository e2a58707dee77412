// The one wording of every command's --db help (issue 35: it was worded four ways).
#pragma once

namespace jouleprof::cli {

inline constexpr const char* kDbOptionHelp =
    "run store (default: $JOULEPROF_DB, else $XDG_DATA_HOME/jouleprof/runs.db, else ~/.local/share/jouleprof/runs.db)";

}  // namespace jouleprof::cli
