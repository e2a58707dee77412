// Kernel/range activity of a traced program: the per-process files written by the CUPTI
// injection library (format.hpp), read, merged, aligned to the run time base and grouped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/core/interned.hpp"
#include "jouleprof/core/timebase.hpp"

namespace jouleprof {

struct Activity {
  enum class Kind { kernel, memcpy, memset, sync, range, mark };
  Kind kind = Kind::kernel;
  int process = 0;          ///< index into TraceData::processes
  uint32_t device = 0;      ///< CUDA device ordinal (CUPTI deviceId)
  uint32_t context = 0, stream = 0, correlation = 0;
  int64_t start_ns = 0, end_ns = 0;  ///< CUPTI timestamps
  double t0_s = 0, t1_s = 0;         ///< run time base (after align_trace)
  // Names and paths repeat millions of times in a long trace: each is kept once (interned.hpp).
  Interned name;             ///< demangled kernel name, "memcpy DtoD", NVTX range name
  Interned domain;           ///< NVTX domain
  Interned path;             ///< kernels: enclosing NVTX push/pop ranges of the launching thread, "a/b/c"
  Interned phase;            ///< kernels: enclosing NVTX start/end range or measure phase
  Interned kclass;           ///< kernels/copies: class from the rules (kernel_classes.hpp)
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, static_shared_bytes = 0, dynamic_shared_bytes = 0, graph_id = 0;
  uint64_t bytes = 0;
  uint32_t copy_kind = 0;
  uint64_t thread = 0;  ///< ranges: thread id (0: process-wide start/end range)
  int depth = 0;        ///< ranges: nesting depth on their thread
  bool complete = true; ///< ranges: false when the end was never recorded
  double duration_s() const { return t1_s - t0_s; }
  bool on_gpu() const { return kind == Kind::kernel || kind == Kind::memcpy || kind == Kind::memset; }
};

const char* activity_kind_name(Activity::Kind k);

struct ClockPair {
  uint64_t cupti_ns = 0;
  int64_t realtime_ns = 0;
  int64_t half_bracket_ns = 0;
};

struct ProcessTrace {
  std::string file;
  int64_t pid = 0, ppid = 0;
  int64_t start_realtime_ns = 0;
  std::vector<std::string> command;
  uint32_t cupti_version = 0;
  bool ended = false;    ///< the End record is there (not killed, not cut off)
  int signal = 0;        ///< the signal that ended it (End record), 0: normal exit
  uint64_t records = 0;  ///< activity records read
  uint64_t dropped = 0;  ///< records CUPTI reported dropped
  std::vector<std::string> notes;  ///< errors/warnings the injection library wrote
  bool records_stopped = false;    ///< another CUPTI client took the records before the end (format.hpp)
  std::string damage;    ///< "corrupt record at offset N: ..." / "truncated at offset N"
  std::vector<ClockPair> clocks;
  /// An API call's record: a launch (which CPU thread launched which correlation id, when) or an
  /// NVTX anchor (the correlation id at which a range opened or closed on that thread).
  struct Launch {
    uint32_t correlation = 0;
    uint64_t thread = 0;
    int64_t start_ns = 0;
    bool anchor = false;
  };
  std::vector<Launch> launches;
  std::map<uint32_t, std::string> device_uuids;  ///< CUDA ordinal → "GPU-xxxxxxxx-xxxx-..." (NVML's form)
  /// Sampled mode (format.hpp DutyCycle): the windows in which its kernel records were kept, in
  /// CUPTI's clock (read_sample_logs); empty: traced in full.
  std::vector<std::pair<int64_t, int64_t>> sample_windows_ns;
  /// Paused by the program (jouleprof_trace_pause … resume): no kernel records, no NVTX ranges.
  std::vector<std::pair<int64_t, int64_t>> pauses_ns;
  bool windowed = false;  ///< a switch log was read: only sample_windows_ns was recorded
  // Alignment (align_trace): realtime = cupti + offset, offset interpolated start→end.
  double clock_offset_start_ns = 0, clock_offset_end_ns = 0, clock_drift_ppm = 0;
};

/// Sampled mode and/or pauses over the whole run: kernels and copies were recorded only in
/// `windows_s` (the paused time and the duty cycle's off phases are outside them).
struct TraceSampling {
  double on_s = 0, period_s = 0;  ///< the duty cycle (0: none)
  std::vector<std::pair<double, double>> windows_s;  ///< run time base, sorted, disjoint (align_trace)
  std::vector<std::pair<double, double>> pauses_s;   ///< the program's pauses, run time base, sorted, disjoint
  bool duty_cycle() const { return period_s > 0; }
  bool active() const { return duty_cycle() || !pauses_s.empty(); }
};

struct TraceData {
  std::vector<ProcessTrace> processes;
  TraceSampling sampling;
  std::vector<Activity> activities;
  std::vector<std::string> warnings;
  /// How assign_ranges tied GPU activities to NVTX ranges: "launch records" (each launch call's
  /// own record: thread and time exact), "anchors" (the latest range anchor before the activity's
  /// correlation id; exact for ranges on the launching thread), or "none". Where both launch
  /// records and anchors were recorded, `checked` activities were also placed by their anchors
  /// alone and `agreed` of them landed in the same range and phase.
  struct RangeAssignment {
    std::string method = "none";
    uint64_t assigned = 0, checked = 0, agreed = 0;
  } range_assignment;
  uint64_t dropped() const;
  bool complete() const;  ///< every process ended normally, undamaged, nothing dropped or taken
};

/// Reads one per-process file into `into`. A damaged or cut-off file keeps what precedes the
/// damage (ProcessTrace::damage says where); only a file that is not a trace at all is an error.
Result<void> read_trace_file(const std::string& path, TraceData& into);
/// Reads every trace-*.jpt of a directory (one per traced process), merged into one TraceData.
Result<TraceData> read_trace_dir(const std::string& dir);

/// Sampled mode: reads the switch logs of a trace directory (DIR/sample-PID.txt, format.hpp) into
/// the processes of `t` read from it (by pid) and the duty cycle into t.sampling. A log without
/// its process's trace file is skipped; a damaged line ends its log (the lines before it count).
/// A window still open at the end closes where its process's last record does; so does a pause.
/// A log with on_ns=0 period_ns=0 is a fully traced process's that paused (pauses_ns).
void read_sample_logs(const std::string& dir, TraceData& t);

/// Converts CUPTI timestamps to the run time base: CUPTI → CLOCK_REALTIME with each process's
/// clock pairs (offset at start and end, interpolated; drift reported), then CLOCK_REALTIME →
/// run time with the measurement's calibrations (origin and realtime-steady offsets). Sampled
/// windows too: t.sampling.windows_s is the union of the processes' windows.
void align_trace(TraceData& t, int64_t origin_realtime_ns, const std::vector<TimeBase::Calibration>& calibrations);

/// Fills Activity::path (NVTX push/pop ranges enclosing each launch on its CPU thread) and
/// Activity::phase (NVTX start/end ranges enclosing the launch), and range_assignment.
void assign_ranges(TraceData& t);

/// The phase an NVTX path names: its outermost "prefill" or "decode" range (the PyTorch helper's),
/// wherever it sits (a library's range left open, such as NCCL's communicator set-up, may be above
/// it); empty if none.
std::string_view phase_in_path(std::string_view path);

/// CUPTI's memcpy kind as "HtoD", "DtoH", "DtoD", "PtoP" ...; null for a kind it does not name.
const char* memcpy_kind_name(uint32_t copy_kind);

std::string demangle(const std::string& name);

}  // namespace jouleprof
