#include "jouleprof/core/text.hpp"
#include "jouleprof/trace/unique_kernels.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace jouleprof {

std::vector<UniqueKernel> unique_kernels(const TraceData& t, std::vector<std::size_t>* activity_row) {
  using Key = std::tuple<std::string, int, uint32_t, int, int, int, int, int, int, uint32_t, uint32_t, uint64_t>;
  std::map<Key, std::size_t> index;
  std::vector<UniqueKernel> rows;
  if (activity_row != nullptr) activity_row->assign(t.activities.size(), SIZE_MAX);
  for (std::size_t i = 0; i < t.activities.size(); ++i) {
    const Activity& a = t.activities[i];
    if (!a.on_gpu()) continue;
    const uint32_t shared = a.static_shared_bytes + a.dynamic_shared_bytes;
    const uint64_t bytes = a.kind == Activity::Kind::kernel ? 0 : a.bytes;
    Key k{a.name, static_cast<int>(a.kind), a.device, a.grid[0], a.grid[1], a.grid[2], a.block[0], a.block[1], a.block[2],
          a.registers, shared, bytes};
    auto [it, inserted] = index.emplace(k, rows.size());
    if (inserted) {
      UniqueKernel u;
      u.name = a.name;
      u.kind = activity_kind_name(a.kind);
      u.kclass = a.kclass;
      u.device = a.device;
      for (int d = 0; d < 3; ++d) {
        u.grid[d] = a.grid[d];
        u.block[d] = a.block[d];
      }
      u.registers = a.registers;
      u.shared_bytes = shared;
      u.bytes = bytes;
      rows.push_back(std::move(u));
    }
    UniqueKernel& u = rows[it->second];
    ++u.count;
    u.total_s += a.duration_s();
    if (activity_row != nullptr) (*activity_row)[i] = it->second;
  }
  return rows;
}

namespace {

nlohmann::json row_json(const UniqueKernel& u) {
  nlohmann::json j;
  j["name"] = u.name;
  j["kind"] = u.kind;
  j["class"] = u.kclass;
  j["device"] = u.device;
  j["grid"] = {u.grid[0], u.grid[1], u.grid[2]};
  j["block"] = {u.block[0], u.block[1], u.block[2]};
  j["registers_per_thread"] = u.registers;
  j["shared_memory_bytes"] = u.shared_bytes;
  if (u.kind != "kernel") j["bytes"] = u.bytes;
  j["count"] = u.count;
  j["total_duration_s"] = u.total_s;
  j["mean_duration_s"] = u.mean_s();
  j["energy_j"] = u.energy_j ? nlohmann::json(*u.energy_j) : nlohmann::json(nullptr);
  j["mean_energy_j"] = u.energy_j && u.count > 0 ? nlohmann::json(*u.energy_j / static_cast<double>(u.count)) : nlohmann::json(nullptr);
  j["attribution_method"] = u.method;
  return j;
}

}  // namespace

std::string unique_kernel_jsonl(const std::vector<UniqueKernel>& rows) {
  std::string out;
  for (const UniqueKernel& u : rows) out += row_json(u).dump() + "\n";
  return out;
}

std::string unique_kernel_csv(const std::vector<UniqueKernel>& rows) {
  std::string out =
      "name,kind,class,device,grid_x,grid_y,grid_z,block_x,block_y,block_z,registers_per_thread,shared_memory_bytes,bytes,"
      "count,total_duration_s,mean_duration_s,energy_j,mean_energy_j,attribution_method\n";
  for (const UniqueKernel& u : rows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{},{},{}\n", csv_field(u.name), u.kind, u.kclass, u.device,
                       u.grid[0], u.grid[1], u.grid[2], u.block[0], u.block[1], u.block[2], u.registers, u.shared_bytes, u.bytes, u.count,
                       u.total_s, u.mean_s(), u.energy_j ? fmt::format("{:.9g}", *u.energy_j) : "",
                       u.energy_j && u.count > 0 ? fmt::format("{:.9g}", *u.energy_j / static_cast<double>(u.count)) : "", u.method);
  }
  return out;
}

Result<void> write_unique_kernels(const std::vector<UniqueKernel>& rows, const std::string& path) {
  const bool csv = path.size() > 4 && path.substr(path.size() - 4) == ".csv";
  const std::string text = csv ? unique_kernel_csv(rows) : unique_kernel_jsonl(rows);
  if (path == "-") {
    std::cout << text;
    return {};
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return make_error(Errc::io, "cannot write " + path);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return make_error(Errc::io, "cannot write " + path);
  return {};
}

}  // namespace jouleprof
