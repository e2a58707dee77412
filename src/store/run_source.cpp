#include "jouleprof/store/run_source.hpp"

#include <filesystem>
#include <optional>

#include "jouleprof/result/result_io.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof {

Result<std::vector<LoadedRun>> load_runs(const std::vector<std::string>& refs, const std::string& db_path,
                                         bool with_timelines) {
  std::vector<LoadedRun> out;
  std::optional<Store> store;
  for (const std::string& ref : refs) {
    std::error_code ec;
    const bool is_file = ref.find_first_not_of("0123456789") != std::string::npos && ref.rfind("last", 0) != 0 &&
                         std::filesystem::is_regular_file(ref, ec);
    if (is_file) {
      auto m = read_result_file(ref);
      if (!m) return m.error();
      out.push_back({0, std::filesystem::path(ref).filename().string(), std::move(*m)});
      continue;
    }
    if (!store) {
      auto s = Store::open(resolve_db_path(db_path), Store::Mode::read);
      if (!s) return s.error();
      store.emplace(std::move(*s));
    }
    auto id = resolve_run_ref(*store, ref);
    if (!id) return id.error();
    auto m = store->load(*id, with_timelines);
    if (!m) return m.error();
    out.push_back({*id, "run " + std::to_string(*id), std::move(*m)});
  }
  return out;
}

}  // namespace jouleprof
