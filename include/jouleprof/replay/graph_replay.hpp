// Exact replay of a program's own kernels (docs/replay.md, "Exact replay"): a CUDA graph the
// program captured (PyTorch: torch.cuda.CUDAGraph(keep_graph=True).raw_cuda_graph(); C++: any
// CUgraph / cudaGraph_t) is listed node by node — each kernel's function, launch configuration
// and real arguments, each memcpy/memset — identical nodes are grouped, and each group is replayed
// alone: a graph of K copies of that node (same function, same arguments, so the program's own
// buffers, still alive; copy i is the group's i-th member mod n, each on its own buffers), launched in paced trials and measured with the GPU's power sensor as
// `jouleprof replay` measures its rows. The CUDA driver is loaded at run time (libcuda.so.1).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof {
namespace replay {
class Probe;  // workloads/replay/trials.hpp: the host clock, the power samples, the energy counter
}

/// One node of a graph.
struct GraphNode {
  std::string kind;  ///< kernel | memcpy | memset | empty | host | graph | event_record | ... (type N)
  std::string name;  ///< kernels: the demangled function name; copies: "memcpy DtoD" ...
  std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
  unsigned shared_bytes = 0;
  uint64_t bytes = 0;          ///< copies: bytes moved/set
  std::size_t group = SIZE_MAX;  ///< its group (SIZE_MAX: not replayed)
};

/// Identical nodes: same function, grid, block, shared memory and argument bytes (device
/// pointers masked: the same kernel on another layer's buffers of the same shape is the same row).
struct GraphGroup {
  std::string kind, name;
  std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
  unsigned shared_bytes = 0;
  uint64_t bytes = 0;
  std::size_t count = 0, first_node = 0;
  std::size_t argument_bytes = 0;  ///< kernels: size of the argument block compared
  /// The same in two processes that capture the same step: a hash of the function's name (not its
  /// address), launch configuration and its first node's place in the graph (not the argument bytes,
  /// which can hold per-process words); copies and memsets: kind and size; "-2", "-3" ... after a
  /// hash collision, in graph order. The restart of a faulting replay (docs/replay.md, "Faults and
  /// limits") finds its rows by it.
  std::string id;
};

struct GraphListing {
  std::vector<GraphNode> nodes;
  std::vector<GraphGroup> groups;
  std::map<std::string, std::size_t> not_replayed;  ///< node kind → count (types the replay does not re-create)
  /// Stream-ordered allocations (mem_alloc / mem_free nodes): not replayed themselves; the replay
  /// backs each allocation with a real buffer and moves the nodes' pointers into it.
  std::size_t mem_alloc_nodes = 0, mem_free_nodes = 0;
  uint64_t mem_alloc_bytes = 0;
  std::vector<std::string> warnings;
};

/// One group, replayed.
struct ExactRow {
  GraphGroup group;
  /// measured (time and energy per call) | timed (time measured, power of the measured rows) |
  /// failed (the replay of this node failed: reason) | not_measured (the context was lost before it) |
  /// faulted (its replay faulted in an earlier process: GraphReplayOptions::faulted)
  std::string status;
  std::string reason;
  std::size_t copies = 0;
  double time_ns = 0, time_half_width_ns = 0, power_w = 0, power_half_width_w = 0, energy_j = 0, energy_half_width_j = 0;
  double short_trials_ci = -1, trial_s = 0, temperature_c = -1;
  std::vector<double> trial_power_w, trial_time_ns;
};

struct StepFigures {
  bool measured = false;
  std::string reason;
  double time_ns = 0, time_half_width_ns = 0, power_w = 0, energy_j = 0, energy_half_width_j = 0;
};

struct GraphReplayOptions {
  std::string cuda_library;       ///< "" : $JOULEPROF_CUDA_LIB, else libcuda.so.1
  std::string sensor = "nvml";    ///< the GPU sensor backend (nvml | sim)
  int trials = 5;
  double trial_s = 0.2, settle_s = 0.3, warmup_s = 3;
  double ci_target = 0.02, ci_min_ns = 10e3, long_trial_s = 1.0, row_cap_s = 6;
  int max_trials = 8;
  double coverage = 0.99;         ///< measure groups, longest first (count × time), to this share of the step's node time
  std::size_t max_rows = 60;      ///< ... or this many; the rest: exact time, power of the measured rows
  double graph_ms = 2;            ///< copies of a node per replay graph: about this long
  std::size_t max_copies = 4096;
  bool measure_step = true;       ///< also measure the whole graph as captured (a check on Σ rows)
  /// Replay each group alone (the rows basis). Off: the whole step only, for steps whose nodes read
  /// temporaries that later nodes overwrite (an index kernel then asserts: docs/replay.md).
  bool rows = true;

  // A replay in a child process that a parent restarts when a kernel faults (docs/replay.md,
  // "Faults and limits"; jouleprof.replay.replay_step_isolated is such a parent).
  /// Appends one JSON line per event to this file, flushed before the launch it announces:
  /// listing, step, start (a row's launches begin), row (a row finished), fault (a row faulted:
  /// the context is lost). read_replay_progress() reads it back.
  std::string progress_path;
  /// Rows an earlier process finished, by GraphGroup::id: taken as they are, not replayed.
  std::map<std::string, ExactRow> prior;
  /// Rows that faulted in an earlier process (id → reason): status "faulted", not replayed.
  std::map<std::string, std::string> faulted;
  /// The whole step's figures from an earlier process: not measured again (the warm-up still runs).
  std::optional<StepFigures> prior_step;
};

/// The start of the warning an in-process replay (no progress_path) gives when a fault lost the
/// CUDA context: the caller's process cannot use CUDA any more (Python's replay_step prints it).
inline constexpr const char* kContextLostWarning = "this process's CUDA context was lost";

struct GraphReplay {
  std::string gpu;
  /// The board's NVML UUID (its own sensor's; empty with a probe passed in): boards of one model
  /// can differ by several percent (docs/validation/replay.md), so `trace --replay` marks another.
  std::string gpu_uuid;
  double idle_w = 0;
  std::size_t nodes = 0;
  std::vector<ExactRow> rows;             ///< one per group, longest (count × time) first
  std::map<std::string, std::size_t> not_replayed;
  /// The graph's stream-ordered allocations (GraphListing) and how many got a real buffer.
  std::size_t mem_alloc_nodes = 0, mem_free_nodes = 0, mem_alloc_backed = 0;
  uint64_t mem_alloc_bytes = 0;
  StepFigures step;                       ///< the whole graph as captured, measured the same way
  /// Σ count × per-call figures (the exact replay's prediction of one step's kernels).
  double predicted_time_s = 0, predicted_energy_j = 0, predicted_energy_half_width_j = 0;
  double measured_share = 0, timed_share = 0, failed_share = 0;  ///< shares of the predicted energy
  std::vector<std::string> warnings;
};

/// Lists and groups the nodes of `graph` (a CUgraph / cudaGraph_t handle).
Result<GraphListing> list_cuda_graph(std::uintptr_t graph, const std::string& cuda_library = "");

/// Lists, groups and replays each group alone (see above). `probe`: the sensor and host clock
/// (null: jouleprof's GPU sensor of the current CUDA device, backend `o.sensor`).
/// A group whose replay fails gets status "failed" and a one-line reason naming the kernel; the
/// others go on (after a fault that leaves the CUDA context unusable, they are "not_measured").
Result<GraphReplay> replay_cuda_graph(std::uintptr_t graph, const GraphReplayOptions& o, replay::Probe* probe = nullptr);

/// {schema "jouleprof.exact_replay", schema_version 1, gpu, nodes, rows[...], step, prediction}
std::string graph_replay_json(const GraphReplay& r);

/// A progress file (GraphReplayOptions::progress_path) read back, over all the processes that
/// appended to it: what a restart passes on as `prior`, `prior_step` and `faulted`.
struct ReplayProgress {
  /// The last listing: gpu, idle power, nodes, warnings, and every group as a not_measured row.
  std::optional<GraphReplay> listing;
  std::map<std::string, ExactRow> rows;       ///< finished rows by id (any status but not_measured)
  std::optional<StepFigures> step;            ///< the whole step's figures, once measured
  std::map<std::string, std::string> faulted; ///< rows whose replay faulted with the process alive: id → reason
  /// The row whose launches began last and that neither finished nor faulted ("" none): the row
  /// being replayed when a process that died stopped writing.
  std::string started;
};
/// Reads a progress file; a torn last line (the process died while writing it) is ignored.
Result<ReplayProgress> read_replay_progress(const std::string& path);
/// The document of a replay that was not finished, from its progress alone (no GPU): the
/// finished rows, `faulted` ones, the rest not_measured with `reason`; the prediction over them.
Result<GraphReplay> graph_replay_from_progress(const ReplayProgress& p, const std::map<std::string, std::string>& faulted,
                                               const std::string& reason);
std::string graph_replay_text(const GraphReplay& r, std::size_t top);

}  // namespace jouleprof
