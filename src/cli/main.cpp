// jouleprof: the command-line front end. Each subcommand lives in its own cmd_*.cpp file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "options.hpp"
#include "jouleprof/config.hpp"
#include "jouleprof/control/session.hpp"
#include "jouleprof/core/text.hpp"

namespace jouleprof::cli {

// Function-local so registration from other files' static initialisers is order-safe.
static std::vector<AddCommand>& registry() {
  static std::vector<AddCommand> commands;
  return commands;
}
bool register_command(AddCommand add) {
  registry().push_back(add);
  return true;
}
const std::vector<AddCommand>& registered_commands() { return registry(); }

static std::vector<std::string>& after_dashes() {
  static std::vector<std::string> words;
  return words;
}
const std::vector<std::string>& command_after_dashes() { return after_dashes(); }

static std::vector<std::string>& argv_words() {
  static std::vector<std::string> words;
  return words;
}
const std::vector<std::string>& invocation() { return argv_words(); }

}  // namespace jouleprof::cli

int main(int argc, char** argv) {
  CLI::App app{"jouleprof — energy of AI inference on GPUs"};
  app.set_version_flag("--version", std::string("jouleprof ") + JOULEPROF_VERSION + " (" + JOULEPROF_GIT_REVISION + ")");
  app.require_subcommand(1);
  // Each add_* registers its subcommand (the one just added is the last) and returns its runner.
  std::map<CLI::App*, jouleprof::cli::Runner> runners;
  for (auto add : jouleprof::cli::registered_commands()) {
    auto run = add(app);
    runners[app.get_subcommands({}).back()] = std::move(run);
  }
  jouleprof::cli::detail::apply_contract(app);
  for (int i = 0; i < argc; ++i) jouleprof::cli::argv_words().emplace_back(argv[i]);
  // Split at the first "--": what follows is the workload's, untouched by CLI11.
  int own = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      own = i;
      break;
    }
  }
  for (int i = own + 1; i < argc; ++i) jouleprof::cli::after_dashes().emplace_back(argv[i]);
  // Global options may come before the subcommand (docs/cli.md): moved after it.
  const auto words = jouleprof::cli::detail::hoist_global_options(
      std::vector<std::string>(argv + 1, argv + own), app);
  std::vector<const char*> own_argv{argv[0]};
  for (const auto& w : words) own_argv.push_back(w.c_str());
  try {
    app.parse(static_cast<int>(own_argv.size()), own_argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The message quotes what was typed: printable (core/text), whatever bytes it held.
    std::fprintf(stderr, "jouleprof: error: %s (see jouleprof%s --help)\n",
                 jouleprof::for_terminal(jouleprof::cli::detail::parse_error_message(e, app, words)).c_str(),
                 jouleprof::cli::detail::help_path(app).c_str());
    return jouleprof::cli::kExitUsage;
  }
  // Only the commands that run a command (measure, trace, sweep) take words after "--".
  if (!jouleprof::cli::after_dashes().empty()) {
    for (const auto& [sub, run] : runners) {
      const std::string& n = sub->get_name();
      if (sub->parsed() && n != "measure" && n != "trace" && n != "sweep") {
        std::fprintf(stderr, "jouleprof: error: %s takes no command after '--', got '%s' (see jouleprof%s --help)\n", n.c_str(),
                     jouleprof::for_terminal(jouleprof::cli::after_dashes().front()).c_str(), jouleprof::cli::detail::help_path(app).c_str());
        return jouleprof::cli::kExitUsage;
      }
    }
  }
  try {
    for (const auto& [sub, run] : runners) {
      if (!sub->parsed()) continue;
      // GPU settings a killed jouleprof left changed on this host are put back first (issue 17);
      // `restore` does it itself (and `restore --check` must see what was left).
      if (sub->get_name() != "restore") {
        jouleprof::control::restore_leftovers_at_start(
            [](const std::string& msg) { std::fprintf(stderr, "jouleprof: %s\n", msg.c_str()); });
      }
      return run();
    }
  } catch (const std::exception& e) {
    // A bug, not bad input: say so in one line, exit 1 (docs/cli.md).
    std::fprintf(stderr, "jouleprof: error: internal error: %s\n", jouleprof::for_terminal(e.what()).c_str());
    return jouleprof::cli::kExitInternal;
  }
  return jouleprof::cli::kExitUsage;
}
