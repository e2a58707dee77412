// Run store benchmarks on a 2-hour, 8-GPU, 50 Hz run (2.88 M power samples plus 2 Hz clocks,
// temperature ... : 3.4 M samples): insert and load with the store's layout (per-series chunks
// of float64 pairs) against the alternative layout of one SQL row per sample.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "jouleprof/result/result_io.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/store/synthetic.hpp"

#include "synthetic_run.hpp"

using namespace jouleprof;

namespace {

std::string temp_db(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("jouleprof-bench-") + name + "-" + std::to_string(getpid()) + ".db")).string();
}

double db_bytes(const std::string& p) {
  std::error_code ec;
  double total = 0;
  for (const char* suffix : {"", "-wal"}) {
    const auto n = std::filesystem::file_size(p + suffix, ec);
    if (!ec) total += static_cast<double>(n);
  }
  return total;
}

void remove_db(const std::string& p) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p + suffix);
}

void BM_Store_Insert_2h_8gpu_50Hz(benchmark::State& state) {
  const Measurement& m = bench::long_synthetic_run();
  const std::string db = temp_db("insert");
  double bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    remove_db(db);
    state.ResumeTiming();
    auto id = record_measurement(m, [&] {
      StoreOptions o;
      o.db_path = db;
      return o;
    }());
    if (!id) {
      state.SkipWithError(id.error().message.c_str());
      break;
    }
    state.PauseTiming();
    bytes = db_bytes(db);
    state.ResumeTiming();
  }
  state.counters["samples"] = static_cast<double>(timeline_sample_count(m));
  state.counters["db_MB"] = bytes / 1e6;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * timeline_sample_count(m)));
  remove_db(db);
}
BENCHMARK(BM_Store_Insert_2h_8gpu_50Hz)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Store_Load_2h_8gpu_50Hz(benchmark::State& state) {
  const Measurement& m = bench::long_synthetic_run();
  const std::string db = temp_db("load");
  remove_db(db);
  StoreOptions o;
  o.db_path = db;
  if (!record_measurement(m, o)) {
    state.SkipWithError("insert failed");
    return;
  }
  auto s = Store::open(db, Store::Mode::read);
  if (!s) {
    state.SkipWithError(s.error().message.c_str());
    return;
  }
  const bool with_timelines = state.range(0) != 0;
  for (auto _ : state) {
    auto back = s->load(1, with_timelines);
    if (!back) {
      state.SkipWithError(back.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(back->timelines.size());
  }
  if (with_timelines) state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * timeline_sample_count(m)));
  remove_db(db);
}
BENCHMARK(BM_Store_Load_2h_8gpu_50Hz)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(3);

// The alternative layout: samples(run_id, device, metric, t_s, value), one row each.
void BM_Store_SamplesTableBaseline_InsertLoad(benchmark::State& state) {
  const Measurement& m = bench::long_synthetic_run();
  const std::string db = temp_db("rows");
  double insert_s = 0, load_s = 0, bytes = 0;
  for (auto _ : state) {
    remove_db(db);
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    sqlite3_exec(h, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                    "CREATE TABLE samples(run_id INTEGER, device INTEGER, metric INTEGER, t_s REAL, value REAL);"
                    "CREATE INDEX samples_run ON samples(run_id, device, metric, t_s);", nullptr, nullptr, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    sqlite3_exec(h, "BEGIN", nullptr, nullptr, nullptr);
    sqlite3_stmt* ins = nullptr;
    sqlite3_prepare_v2(h, "INSERT INTO samples VALUES(1,?,?,?,?)", -1, &ins, nullptr);
    for (std::size_t g = 0; g < m.timelines.size(); ++g) {
      for (int k = 0; k < kMetricCount; ++k) {
        m.timelines[g]->series[static_cast<std::size_t>(k)].for_each([&](const Sample& x) {
          sqlite3_bind_int(ins, 1, static_cast<int>(g));
          sqlite3_bind_int(ins, 2, k);
          sqlite3_bind_double(ins, 3, x.t_s);
          sqlite3_bind_double(ins, 4, x.value);
          sqlite3_step(ins);
          sqlite3_reset(ins);
        });
      }
    }
    sqlite3_finalize(ins);
    sqlite3_exec(h, "COMMIT", nullptr, nullptr, nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    sqlite3_stmt* sel = nullptr;
    sqlite3_prepare_v2(h, "SELECT device, metric, t_s, value FROM samples WHERE run_id = 1 ORDER BY device, metric, t_s", -1, &sel,
                       nullptr);
    std::vector<Sample> all;
    while (sqlite3_step(sel) == SQLITE_ROW) all.push_back({sqlite3_column_double(sel, 2), sqlite3_column_double(sel, 3)});
    sqlite3_finalize(sel);
    const auto t2 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(all.data());
    sqlite3_close(h);
    insert_s = std::chrono::duration<double>(t1 - t0).count();
    load_s = std::chrono::duration<double>(t2 - t1).count();
    bytes = db_bytes(db);
  }
  state.counters["insert_ms"] = insert_s * 1e3;
  state.counters["load_ms"] = load_s * 1e3;
  state.counters["db_MB"] = bytes / 1e6;
  remove_db(db);
}
BENCHMARK(BM_Store_SamplesTableBaseline_InsertLoad)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
