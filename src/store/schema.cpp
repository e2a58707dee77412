#include "schema.hpp"

namespace jouleprof::detail {

namespace {

// Version 1. A run's full result JSON (without samples) is kept verbatim in runs.result_json,
// so loading gives back exactly what was measured; the other tables are its queryable parts.
// Timelines are per-series chunks of little-endian (t_s, value) float64 pairs (encoding
// 'f64le-pairs', kTimelineChunk samples each): benchmarked against one row per sample in
// bench/store_bench.cpp (docs/store.md, "Timelines").
constexpr const char* kV1 = R"sql(
CREATE TABLE runs (
  id                    INTEGER PRIMARY KEY AUTOINCREMENT,
  fingerprint           TEXT UNIQUE,
  recorded_at_ns        INTEGER NOT NULL,
  origin_realtime_ns    INTEGER NOT NULL,
  command_json          TEXT NOT NULL,
  command_text          TEXT NOT NULL,
  host                  TEXT NOT NULL,
  status                TEXT NOT NULL,
  simulated             INTEGER NOT NULL,
  duration_s            REAL NOT NULL,
  measured_runs         INTEGER NOT NULL,
  gpu_energy_j          REAL,
  gpu_energy_ci95_j     REAL,
  run_duration_s        REAL,
  source                TEXT NOT NULL,
  tool_version          TEXT NOT NULL,
  result_schema_version INTEGER NOT NULL,
  result_json           TEXT NOT NULL
);
CREATE INDEX runs_origin ON runs(origin_realtime_ns);

CREATE TABLE tags (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key    TEXT NOT NULL,
  value  TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE INDEX tags_key_value ON tags(key, value);

CREATE TABLE devices (
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  gpu_index      INTEGER NOT NULL,
  name           TEXT NOT NULL,
  uuid           TEXT NOT NULL,
  pci_bus_id     TEXT NOT NULL,
  driver_version TEXT NOT NULL,
  backend        TEXT NOT NULL,
  simulated      INTEGER NOT NULL,
  power_limit_w  REAL,
  idle_power_w   REAL,
  PRIMARY KEY (run_id, position)
);

CREATE TABLE windows (
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  position         INTEGER NOT NULL,
  name             TEXT NOT NULL,
  kind             TEXT NOT NULL,
  run_index        INTEGER NOT NULL,
  parent           INTEGER NOT NULL,
  t0_s             REAL NOT NULL,
  t1_s             REAL NOT NULL,
  complete         INTEGER NOT NULL,
  gpu_energy_j     REAL NOT NULL,
  gpu_above_idle_j REAL,
  meter_j          REAL,
  counts_json      TEXT NOT NULL,
  PRIMARY KEY (run_id, position)
);

CREATE TABLE window_energy (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  window        INTEGER NOT NULL,
  device        INTEGER NOT NULL,
  energy_j      REAL NOT NULL,
  method        TEXT NOT NULL,
  uncertainty_j REAL NOT NULL,
  counter_j     REAL,
  timeline_j    REAL,
  above_idle_j  REAL,
  mean_power_w  REAL NOT NULL,
  PRIMARY KEY (run_id, window, device)
);

CREATE TABLE statistics (
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  what            TEXT NOT NULL,
  n               INTEGER NOT NULL,
  mean            REAL NOT NULL,
  median          REAL NOT NULL,
  stdev           REAL NOT NULL,
  min             REAL NOT NULL,
  max             REAL NOT NULL,
  ci95_half_width REAL NOT NULL,
  PRIMARY KEY (run_id, what)
);

CREATE TABLE timelines (
  id      INTEGER PRIMARY KEY,
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  source  TEXT NOT NULL,
  device  INTEGER NOT NULL,
  metric  TEXT NOT NULL,
  samples INTEGER NOT NULL,
  t_first REAL,
  t_last  REAL,
  UNIQUE (run_id, source, device, metric)
);

CREATE TABLE timeline_chunks (
  timeline_id INTEGER NOT NULL REFERENCES timelines(id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  samples     INTEGER NOT NULL,
  t_first     REAL NOT NULL,
  t_last      REAL NOT NULL,
  encoding    TEXT NOT NULL,
  data        BLOB NOT NULL,
  PRIMARY KEY (timeline_id, seq)
);

-- Kernels, memory copies and NVTX ranges (filled once kernel tracing lands).
CREATE TABLE activities (
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  device         INTEGER NOT NULL,
  kind           TEXT NOT NULL,
  name           TEXT NOT NULL,
  t0_s           REAL NOT NULL,
  t1_s           REAL NOT NULL,
  stream         INTEGER,
  correlation_id INTEGER,
  attrs_json     TEXT
);
CREATE INDEX activities_run ON activities(run_id, device, t0_s);
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> m = {{1, kV1}};
  return m;
}

}  // namespace jouleprof::detail
