// The per-process trace file written by the CUPTI injection library and read by `jouleprof trace`
// (docs/trace.md, "File format"). Binary, little-endian, append-only:
//
//   FileHeader, then records: RecordHeader{type, size} followed by `size` payload bytes.
//
// Payloads are the fixed structs below (a reader accepts a larger size, ignoring the tail, so
// fields can be appended) or text. Times are CUPTI timestamps (CLOCK_REALTIME ns on our H100,
// checked per file by the Clock records). A file without an End record was cut off (the process
// was killed): everything before the cut is still valid. Header-only, standard library only: the
// injection library includes it too.
#pragma once

#include <cstdint>

namespace jouleprof::trace_format {

inline constexpr char kMagic[8] = {'J', 'P', 'T', 'R', 'A', 'C', 'E', '1'};
inline constexpr uint32_t kVersion = 1;
inline constexpr const char* kFilePrefix = "trace-";
inline constexpr const char* kFileSuffix = ".jpt";

/// Environment shared by `jouleprof trace` and the injection library.
inline constexpr const char* kDirEnv = "JOULEPROF_TRACE_DIR";        ///< where each process writes its file
inline constexpr const char* kCuptiLibEnv = "JOULEPROF_CUPTI_LIB";   ///< libcupti to load (else by soname)
inline constexpr const char* kBufferEnv = "JOULEPROF_TRACE_BUFFER_MB"; ///< CUPTI buffer size (default 8)
inline constexpr const char* kFlushEnv = "JOULEPROF_TRACE_FLUSH_MS";   ///< periodic flush (default 500)
inline constexpr const char* kSyncEnv = "JOULEPROF_TRACE_SYNC";        ///< "1": also record synchronisation
inline constexpr const char* kLaunchesEnv = "JOULEPROF_TRACE_LAUNCHES"; ///< "1": also record every launch call
inline constexpr const char* kGraphsEnv = "JOULEPROF_TRACE_CUDA_GRAPHS"; ///< "node": each graph node's records; else one per graph launch
/// The name of a graph-level record (one per CUDA graph launch, its nodes not recorded one by one):
/// this prefix and the graph's id.
inline constexpr const char* kGraphRecordPrefix = "CUDA graph ";
inline constexpr const char* kSampleEnv = "JOULEPROF_TRACE_SAMPLE";     ///< sampled mode: percent of each period traced
inline constexpr const char* kSamplePeriodEnv = "JOULEPROF_TRACE_SAMPLE_PERIOD_MS"; ///< sampled mode's period (default 1000)

/// Sampled mode (`trace --sample P%`): kernel and copy records only while the duty cycle is on —
/// the first `on_ns` of every `period_ns`, counted from CLOCK_REALTIME 0, so that every process of
/// a run switches at the same moments; NVTX ranges and their anchors always. Each process writes
/// its switches to DIR/sample-PID.txt (kSampleFilePrefix): a header line
/// "jouleprof-sample 1 on_ns=N period_ns=M", then one line per switch, "on T" or "off T", T in
/// CUPTI's clock (the kernels' clock), each with one write(2) as it happens. The program's pauses
/// (jouleprof_trace_pause/resume) add "pause T" and "resume T" lines; a fully traced process writes
/// the file at its first pause, with on_ns=0 period_ns=0 (no duty cycle).
inline constexpr const char* kSampleFilePrefix = "sample-";
inline constexpr const char* kSampleFileSuffix = ".txt";
inline constexpr const char* kSampleFileMagic = "jouleprof-sample 1";

struct DutyCycle {
  int64_t on_ns = 0, period_ns = 0;
  bool active() const { return on_ns > 0 && period_ns > 0 && on_ns < period_ns; }
  /// Whether records are kept at CLOCK_REALTIME `t`.
  bool on_at(int64_t t) const { return t % period_ns < on_ns; }
  /// The next switch (on→off or off→on) strictly after `t`.
  int64_t next_switch(int64_t t) const {
    const int64_t start = t - t % period_ns;
    return t % period_ns < on_ns ? start + on_ns : start + period_ns;
  }
};

/// The driver call the injection library makes after each NVTX range push/pop/start/end (its API
/// record, enabled alone, is the range's anchor in the correlation-id sequence): CUPTI's callback
/// id of cuDriverGetVersion.
inline constexpr uint32_t kAnchorDriverCbid = 2;

/// The note the injection library writes at exit when its probe (one anchor call, then a forced
/// flush) did not come back to its buffers: another CUPTI client in the process (torch.profiler's
/// Kineto, Nsight) registered its own buffers or disabled the activity kinds, and the records after
/// that went to it. The reader marks the process's trace incomplete.
inline constexpr const char* kRecordsStoppedNote =
    "error: CUPTI's activity records stopped reaching jouleprof: another CUPTI client in this process (e.g. "
    "torch.profiler) took the activity buffers or disabled the kinds; kernels after that point are missing";

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  ///< sizeof(FileHeader) when written
  int64_t pid;
  int64_t ppid;
  int64_t start_realtime_ns;
  uint32_t cupti_version;  ///< cuptiGetVersion(), 0 when unknown
  uint32_t reserved;
};
static_assert(sizeof(FileHeader) == 48);

enum class RecordType : uint16_t {
  string = 1,   ///< u32 id, then the bytes (interned names and domains)
  kernel = 2,
  memcpy = 3,
  memset = 4,
  sync = 5,
  marker = 6,   ///< NVTX push/pop and start/end ranges, instantaneous marks
  api = 7,      ///< runtime/driver API calls (launches, NVTX anchors): CPU thread and time of a correlation id
  dropped = 8,
  clock = 9,
  note = 10,    ///< text: something the user must know (CUPTI error, CUPTI already in use ...)
  end = 11,
  command = 12, ///< text: the process's command line (NUL-separated arguments)
  device = 13,  ///< a CUDA device of the process: its ordinal and UUID (to match NVML's GPUs)
};
inline constexpr uint16_t kLastRecordType = 13;

struct RecordHeader {
  uint16_t type;
  uint16_t reserved;
  uint32_t size;  ///< payload bytes that follow
};
static_assert(sizeof(RecordHeader) == 8);

inline constexpr uint32_t kMaxRecordSize = 1u << 20;  ///< larger sizes mean a corrupt file

struct KernelRecord {
  uint64_t start_ns, end_ns;
  uint32_t device, context, stream, correlation;
  int32_t grid_x, grid_y, grid_z, block_x, block_y, block_z;
  uint32_t registers, static_shared_bytes, dynamic_shared_bytes, name_id;
  uint32_t graph_id;  ///< 0: not launched from a CUDA graph
  uint32_t reserved;
};
static_assert(sizeof(KernelRecord) == 80);

/// memcpy and memset
struct CopyRecord {
  uint64_t start_ns, end_ns;
  uint32_t device, context, stream, correlation;
  uint64_t bytes;
  uint32_t copy_kind;  ///< CUpti_ActivityMemcpyKind for memcpy (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP ...), value for memset
  uint32_t reserved;
};
static_assert(sizeof(CopyRecord) == 48);

struct SyncRecord {
  uint64_t start_ns, end_ns;
  uint32_t sync_type;  ///< CUpti_ActivitySynchronizationType (1 event, 2 stream wait event, 3 stream, 4 context)
  uint32_t context, stream, correlation;
};
static_assert(sizeof(SyncRecord) == 32);

enum MarkerFlag : uint32_t { marker_instant = 1u, marker_start = 2u, marker_end = 4u };

struct MarkerRecord {
  uint64_t timestamp_ns;
  uint64_t object_id;    ///< thread id (push/pop ranges are per thread), else process id
  uint32_t id;           ///< pairs a start with its end
  uint32_t flags;        ///< MarkerFlag bits
  uint32_t name_id;      ///< 0 on end records
  uint32_t domain_id;    ///< 0: the default domain
  uint32_t object_kind;  ///< 1 process, 2 thread
  uint32_t reserved;
};
static_assert(sizeof(MarkerRecord) == 40);

struct ApiRecord {
  uint64_t start_ns, end_ns;
  uint32_t correlation, thread_id;
  uint32_t cbid;    ///< CUPTI callback id of the call
  uint32_t domain;  ///< 0 runtime, 1 driver (an anchor: driver and kAnchorDriverCbid)
};
static_assert(sizeof(ApiRecord) == 32);

struct DroppedRecord {
  uint64_t count;  ///< records CUPTI dropped in this buffer's context/stream since the last report
  uint32_t context, stream;
};
static_assert(sizeof(DroppedRecord) == 16);

enum ClockWhen : uint32_t { clock_start = 0, clock_end = 1, clock_periodic = 2 };

/// One bracketed reading of CUPTI's clock against CLOCK_REALTIME (offset = realtime - cupti).
struct ClockRecord {
  uint64_t cupti_ns;
  int64_t realtime_ns;
  int64_t half_bracket_ns;
  uint32_t when;
  uint32_t reserved;
};
static_assert(sizeof(ClockRecord) == 32);

struct EndRecord {
  uint64_t records;       ///< activity records written
  uint64_t dropped;       ///< records CUPTI reported dropped
  int32_t signal;         ///< 0: normal exit; else the signal that ended the process
  uint32_t reserved;
};
static_assert(sizeof(EndRecord) == 24);

struct DeviceRecord {
  uint32_t id;  ///< CUDA ordinal as the process sees it (CUDA_VISIBLE_DEVICES applies)
  uint32_t name_id;
  uint8_t uuid[16];
};
static_assert(sizeof(DeviceRecord) == 24);

}  // namespace jouleprof::trace_format
