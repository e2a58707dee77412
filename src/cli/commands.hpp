// The subcommand registry: each cmd_*.cpp registers one function that adds its subcommand
// to the app and returns the function that runs it after parsing.
//
//   namespace { Runner add_foo(CLI::App& app) { ... } const bool registered = register_command(add_foo); }
//
// The contract every command follows (docs/cli.md) is applied by main() to all of them: global
// options before or after the subcommand, numbers refused in words when NaN/inf/not numbers,
// -q and --progress everywhere. options.hpp has the helpers: checked() ranges, add_json_option(),
// write_output() ('-' = stdout), global_flags().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "options.hpp"

namespace jouleprof::cli {

using Runner = std::function<int()>;
using AddCommand = Runner (*)(CLI::App& app);

bool register_command(AddCommand add);
const std::vector<AddCommand>& registered_commands();

/// The words after the first "--" on the command line (the workload and its arguments).
/// main() removes them before CLI11 parses, so workload flags never reach jouleprof's parser.
const std::vector<std::string>& command_after_dashes();
/// jouleprof's own command line, as typed (for provenance).
const std::vector<std::string>& invocation();

}  // namespace jouleprof::cli
