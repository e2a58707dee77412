// One function pair per subcommand: register flags, then run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace jouleprof::cli {

/// Adds a subcommand to the app; returns the function that runs it after parsing.
using Runner = std::function<int()>;
Runner add_measure(CLI::App& app);

}  // namespace jouleprof::cli
