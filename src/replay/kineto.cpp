// Streaming import of PyTorch profiler / Kineto Chrome traces (docs/replay.md, "Import").
//
// A trace is one JSON object whose "traceEvents" array holds the events. The file (plain or gzip)
// is read in chunks: the members before and after the array are scanned byte by byte (they are
// small); the array is cut at event boundaries and each piece parsed by simdjson on demand as a
// JSON array, in place: a byte before the piece becomes '[' and the ',' after it ']'. A cheap
// boundary guess ("}" "," "{" with only whitespace between: raw whitespace never occurs inside a
// JSON string) is verified by the parse itself — a wrong guess cannot parse — and on failure the
// piece is cut by the exact byte scanner instead. Peak memory is one chunk plus the compact
// per-kernel records (32 bytes a kernel), not the file.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <simdjson.h>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "jouleprof/core/files.hpp"
#include "jouleprof/replay/kernel_table.hpp"
#include "jouleprof/trace/format.hpp"
#include "jouleprof/trace/trace.hpp"
#include "intervals.hpp"

namespace jouleprof {
namespace {

namespace od = simdjson::ondemand;

// One event (or the members around the array) larger than this is refused: no real Kineto event
// comes near it, and a 1 GB name in a 1 MB gzip is refused after 64 MiB, not read whole.
constexpr std::size_t kMaxPiece = std::size_t{64} << 20;
// A name longer than this makes its event unreadable (skipped and counted).
constexpr std::size_t kMaxName = std::size_t{1} << 20;
// A gzip that expands more than this many times, past 1 GiB, is refused (real traces: ~10x).
constexpr uint64_t kMaxGzipRatio = 500;
constexpr std::size_t kPad = simdjson::SIMDJSON_PADDING + 64;

// Plain or gzip input, opened once (a pipe cannot be opened twice): the first bytes are sniffed
// (gzip, jouleprof trace) from the same descriptor the rest is read from.
class Input {
 public:
  Input() = default;
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input() {
    if (z_open_) inflateEnd(&z_);
  }
  Result<void> open(const std::string& path) {
    auto f = InputFile::open(path, std::numeric_limits<std::size_t>::max());
    if (!f) return f.error();
    file_ = std::move(*f);
    path_ = path;
    head_.resize(8);
    auto got = file_.read(head_.data(), head_.size());
    if (!got) return got.error();
    head_.resize(*got);
    if (head_.size() >= 2 && static_cast<unsigned char>(head_[0]) == 0x1f && static_cast<unsigned char>(head_[1]) == 0x8b) {
      if (inflateInit2(&z_, 15 + 16) != Z_OK) return make_error(Errc::io, "cannot open " + path + " as gzip");
      z_open_ = true;
      in_buf_.resize(1u << 20);
    }
    return {};
  }
  /// The first (up to 8) bytes of the file as stored (before any decompression).
  const std::string& head() const { return head_; }
  bool gzip() const { return z_open_; }
  bool is_pipe() const { return file_.is_pipe(); }

  /// Up to n bytes; 0 at the end.
  Result<std::size_t> read(char* dst, std::size_t n) {
    if (!z_open_) return raw(dst, n);
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    const uInt want = z_.avail_out;
    while (z_.avail_out > 0 && !z_done_) {
      if (z_.avail_in == 0) {
        auto got = raw(in_buf_.data(), in_buf_.size());
        if (!got) return got.error();
        if (*got == 0) {
          if (member_end_) {
            z_done_ = true;
            break;
          }
          return make_error(Errc::parse, path_ + ": gzip data truncated at compressed byte " + std::to_string(compressed_));
        }
        compressed_ += *got;
        z_.next_in = reinterpret_cast<Bytef*>(in_buf_.data());
        z_.avail_in = static_cast<uInt>(*got);
      }
      if (member_end_) {  // another gzip member follows (concatenated .gz); other trailing bytes are ignored
        if (z_.next_in[0] != 0x1f) {
          z_done_ = true;
          break;
        }
        inflateReset(&z_);
        member_end_ = false;
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_end_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return make_error(Errc::parse, path_ + ": gzip data corrupt (" + std::string(z_.msg != nullptr ? z_.msg : "?") + ")");
      }
    }
    const std::size_t out = want - z_.avail_out;
    expanded_ += out;
    if (expanded_ > (uint64_t{1} << 30) && expanded_ > kMaxGzipRatio * std::max<uint64_t>(compressed_, 1)) {
      return make_error(Errc::invalid_argument, path_ + ": the gzip expands more than " + std::to_string(kMaxGzipRatio) + " times (" +
                                                    format_bytes(expanded_) + " from " + format_bytes(compressed_) +
                                                    "): refused as a decompression bomb");
    }
    return out;
  }

 private:
  Result<std::size_t> raw(char* dst, std::size_t n) {
    std::size_t total = 0;
    if (head_used_ < head_.size()) {
      total = std::min(n, head_.size() - head_used_);
      std::memcpy(dst, head_.data() + head_used_, total);
      head_used_ += total;
    }
    if (total == n) return total;
    auto got = file_.read(dst + total, n - total);
    if (!got) return got.error();
    return total + *got;
  }
  InputFile file_;
  std::string path_, head_;
  std::size_t head_used_ = 0;
  z_stream z_{};
  bool z_open_ = false, member_end_ = false, z_done_ = false;
  std::vector<char> in_buf_;
  uint64_t compressed_ = 0, expanded_ = 0;
};

// Exact JSON structure scanner (strings, escapes, nesting), byte by byte.
struct Scanner {
  int depth = 0;
  bool in_string = false, escape = false;
  // Feeds one byte; returns the byte's structural meaning for the caller.
  enum Event { none, open, close, comma, colon, string_end, other };
  Event feed(char c) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
        return string_end;
      }
      return none;
    }
    switch (c) {
      case '"': in_string = true; return none;
      case '{': case '[': ++depth; return open;
      case '}': case ']': --depth; return close;
      case ',': return comma;
      case ':': return colon;
      case ' ': case '\n': case '\r': case '\t': return none;
      default: return other;
    }
  }
};

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Exact nanoseconds from a JSON number in microseconds ("4793851997095.721", "12", "1.5e3").
std::optional<int64_t> us_to_ns(std::string_view s) {
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  bool neg = false;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    neg = true;
    ++i;
  }
  int64_t whole = 0;
  std::size_t digits = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
    if (whole > (INT64_MAX / 10 - 10) / 1000) return std::nullopt;
    whole = whole * 10 + (s[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  int64_t frac = 0;
  int fd = 0;
  bool rest_nonzero = false;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (fd < 3) {
        frac = frac * 10 + (s[i] - '0');
        ++fd;
      } else if (s[i] != '0') {
        rest_nonzero = true;
      }
    }
  }
  if (i < s.size()) {  // exponent or junk: through double (rare in Kineto output)
    char* end = nullptr;
    const std::string tmp(s);
    const double v = std::strtod(tmp.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(std::abs(v) < 9e12)) return std::nullopt;
    return static_cast<int64_t>(std::llround(v * 1000.0));
  }
  while (fd < 3) {
    frac *= 10;
    ++fd;
  }
  int64_t ns = whole * 1000 + frac;
  (void)rest_nonzero;  // sub-nanosecond digits: truncated
  return neg ? -ns : ns;
}

struct OpSig {
  std::string name, dims, types, strides, concrete;  // concrete: "Concrete Inputs" (conv stride/padding ...)
};

struct Pending {
  uint32_t launch;       // index into its Partial's launches
  uint32_t correlation;
  int64_t external;      // -1: none
  int64_t start_ns, dur_ns;
};

struct Counts {
  uint64_t kernels = 0, memcpys = 0, memsets = 0, events = 0;
  int64_t kernel_ns = 0, memcpy_ns = 0, memset_ns = 0;
};

// What one parsing thread collects; merged at the end (Importer::finish).
struct Partial {
  od::parser parser;
  Counts c;
  bool shapes = false;
  std::unordered_map<std::string, uint32_t> launch_ids;
  std::vector<KernelRow> launches;
  std::unordered_map<std::string, uint32_t> sig_ids;
  std::vector<OpSig> sigs;
  std::vector<std::pair<int64_t, uint32_t>> ext_sig;   // External id → op signature
  std::vector<std::pair<uint32_t, int64_t>> corr_ext;  // runtime launch correlation → External id
  std::vector<Pending> pending;
  std::vector<TraceRange> annotations;
  uint64_t skipped = 0, graph_kernels = 0;  // unreadable events (skipped); GPU activities launched by CUDA graphs
  std::string first_skip;                   // why the first was unreadable
  std::string key;  // scratch
};

// A piece of the events array: buf[0] spare for '[', the events in buf[1 .. 1+len), the ',' after.
struct Piece {
  std::vector<char> buf;
  std::size_t len = 0;
  uint64_t offset = 0;  // file offset of buf[1]
};

// The read buffer: buf[0] is a spare byte for '['; data lives in buf[1 .. 1+size).
struct Window {
  std::vector<char> buf;
  std::size_t size = 0;   // bytes in buf after the spare byte
  uint64_t consumed = 0;  // file bytes before buf[1]
  bool eof = false;
  char* data() { return buf.data() + 1; }
  void drop(std::size_t n) {  // drops the first n bytes
    std::memmove(buf.data() + 1, buf.data() + 1 + n, size - n);
    size -= n;
    consumed += n;
  }
};

// The worker threads of the parallel mode: each parses pieces from a bounded queue into its own
// Partial. A piece that does not parse sets `failed`; the rest of the queue is then only drained.
class Pool {
 public:
  using Parse = std::function<bool(Partial&, Piece&)>;
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() { close(); }

  void start(const std::vector<Partial*>& parts, const Parse& parse) {
    max_queue_ = parts.size();
    for (Partial* part : parts) threads_.emplace_back([this, part, parse] { work(*part, parse); });
  }
  std::size_t size() const { return threads_.size(); }
  /// Queues a piece, waiting while the queue is full.
  void push(Piece&& piece) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_space_.wait(lk, [&] { return queue_.size() < max_queue_; });
      queue_.push_back(std::move(piece));
    }
    cv_work_.notify_one();
  }
  /// Waits until every queued piece was taken by a worker.
  void wait_empty() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_space_.wait(lk, [&] { return queue_.empty(); });
  }
  /// The workers finish the queue and end.
  void close() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      closing_ = true;
    }
    cv_work_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  std::atomic<bool> failed{false};

 private:
  void work(Partial& part, const Parse& parse) {
    for (;;) {
      Piece piece;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_work_.wait(lk, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        piece = std::move(queue_.front());
        queue_.pop_front();
      }
      cv_space_.notify_one();
      if (failed.load()) continue;
      if (!parse(part, piece)) failed = true;
    }
  }
  std::mutex mu_;
  std::condition_variable cv_work_, cv_space_;
  std::deque<Piece> queue_;
  std::size_t max_queue_ = 0;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

// What a Partial holds before a piece: a piece that fails to parse is taken back to it.
struct PartialMark {
  std::size_t pending, ext, corr, annotations;
  Counts c;
  uint64_t skipped, graph_kernels;
  explicit PartialMark(const Partial& p)
      : pending(p.pending.size()), ext(p.ext_sig.size()), corr(p.corr_ext.size()), annotations(p.annotations.size()), c(p.c),
        skipped(p.skipped), graph_kernels(p.graph_kernels) {}
  void restore(Partial& p) const {
    p.pending.resize(pending);
    p.ext_sig.resize(ext);
    p.corr_ext.resize(corr);
    p.annotations.resize(annotations);
    p.c = c;
    p.skipped = skipped;
    p.graph_kernels = graph_kernels;
  }
};

class Importer {
 public:
  enum class Cat { skip, kernel, memcpy, memset, op, runtime, annotation };
  Importer(KernelTable& t, int rank, std::string path, std::size_t chunk, int threads, std::function<void(const std::string&)> progress)
      : t_(t), rank_(rank), path_(std::move(path)), chunk_(std::max<std::size_t>(chunk, 64)), threads_(std::max(threads, 1)),
        progress_(std::move(progress)) {}

  /// Parallel: pieces cut at guessed boundaries go to worker threads; a piece that does not parse
  /// (a wrong guess, or bad data) makes run() return `retry` so the caller reads again serially.
  Result<void> run(Input& in, bool& retry);

 private:
  Result<void> parse_events(Partial& p, char* begin, std::size_t len, std::size_t capacity, uint64_t file_offset);
  void start_workers(Pool& pool);
  Result<void> fill(Input& in, Window& w);
  Result<void> read_head(Input& in, Window& w, Scanner& sc, std::string& outer);
  Result<void> read_events(Input& in, Window& w, Pool& pool);
  bool parse_guess(Partial& main, Window& w, std::size_t cut);
  Result<void> read_tail(Input& in, Window& w, Scanner& sc, std::string& outer);
  void event(Partial& p, od::object obj);
  Result<void> members(const std::string& outer);
  void finish();

  KernelTable& t_;
  int rank_;
  std::string path_;
  std::vector<std::unique_ptr<Partial>> parts_;  // [0]: the reading thread's
  const std::size_t chunk_;  // bytes read at a time
  const int threads_;
  std::function<void(const std::string&)> progress_;
};

Importer::Cat category(std::string_view cat) {
  // Kineto's categories, lower-case since PyTorch 1.11; capitalised ("Kernel", "Memcpy",
  // "Runtime", "Operator") before.
  switch (cat.size()) {
    case 6:
      if (cat == "kernel" || cat == "Kernel") return Importer::Cat::kernel;
      if (cat == "cpu_op" || cat == "Memcpy") return cat[0] == 'c' ? Importer::Cat::op : Importer::Cat::memcpy;
      if (cat == "Memset") return Importer::Cat::memset;
      break;
    case 7:
      if (cat == "Runtime" || cat == "runtime") return Importer::Cat::runtime;
      break;
    case 8:
      if (cat == "Operator" || cat == "operator") return Importer::Cat::op;
      break;
    case 10:
      if (cat == "gpu_memcpy") return Importer::Cat::memcpy;
      if (cat == "gpu_memset") return Importer::Cat::memset;
      break;
    case 11:
      if (cat == "cuda_driver") return Importer::Cat::runtime;
      break;
    case 12:
      if (cat == "cuda_runtime") return Importer::Cat::runtime;
      break;
    case 15:
      if (cat == "user_annotation") return Importer::Cat::annotation;
      break;
    default:
      break;
  }
  return Importer::Cat::skip;
}

std::string copy_kind_of(std::string_view name, bool memset) {
  if (memset) return "set";
  for (const char* k : {"HtoD", "DtoH", "DtoD", "PtoP", "HtoH", "DtoA", "AtoD", "AtoH", "HtoA", "AtoA"}) {
    if (name.find(k) != std::string_view::npos) return k;
  }
  return "unknown";
}

// A key compared in place: raw points just after the key's opening quote, inside the padded
// document, so reading lit.size() bytes and the closing quote is always in bounds.
bool key_is(const char* raw, std::string_view lit) {
  return std::memcmp(raw, lit.data(), lit.size()) == 0 && raw[lit.size()] == '"';
}

// An integer arg: false (and the field noted) when it is not one. A type error is recoverable in
// simdjson On Demand: the value is skipped; a structural error throws (the JSON is broken).
bool int_arg(od::value v, int64_t& out, const char* field, const char*& bad) {
  const auto err = v.get_int64().get(out);
  if (err == simdjson::SUCCESS) return true;
  if (err != simdjson::INCORRECT_TYPE && err != simdjson::NUMBER_ERROR && err != simdjson::NUMBER_OUT_OF_RANGE) {
    throw simdjson::simdjson_error(err);
  }
  if (bad == nullptr) bad = field;
  return false;
}

// A [x, y, z] launch dimension: non-negative integers that fit an int.
bool dim_arg(od::value v, int* dst, const char* field, const char*& bad) {
  od::array arr;
  const auto err = v.get_array().get(arr);
  if (err != simdjson::SUCCESS) {
    if (err != simdjson::INCORRECT_TYPE) throw simdjson::simdjson_error(err);
    if (bad == nullptr) bad = field;
    return false;
  }
  int i = 0;
  bool ok = true;
  for (auto e : arr) {
    od::value x;
    if (const auto ee = e.get(x); ee != simdjson::SUCCESS) throw simdjson::simdjson_error(ee);
    int64_t n = 0;
    if (!int_arg(x, n, field, bad)) {
      ok = false;
      continue;
    }
    if (n < 0 || n > INT32_MAX) {
      if (bad == nullptr) bad = field;
      ok = false;
      continue;
    }
    if (i < 3) dst[i++] = static_cast<int>(n);
  }
  return ok;
}

std::string_view raw_array(od::value v, const char*& bad, const char* field) {
  od::array arr;
  const auto err = v.get_array().get(arr);
  if (err != simdjson::SUCCESS) {
    if (err != simdjson::INCORRECT_TYPE) throw simdjson::simdjson_error(err);
    if (bad == nullptr) bad = field;
    return {};
  }
  return arr.raw_json();
}

// A raw token On Demand has not validated: what cannot start any JSON value is broken JSON, not an
// unexpected type (the file is refused with its byte offset, as any other syntax error).
std::string_view checked_token(std::string_view tok) {
  const char c = tok.empty() ? '\0' : tok[0];
  if (!((c >= '0' && c <= '9') || c == '-' || c == '"' || c == '[' || c == '{' || c == 't' || c == 'f' || c == 'n')) {
    throw simdjson::simdjson_error(simdjson::TAPE_ERROR);
  }
  return tok;
}

void skip_event(Partial& p, std::string why) {
  ++p.skipped;
  if (p.first_skip.empty()) p.first_skip = std::move(why);
}

// What one event says, as views into the parsed piece (read_fields fills it).
struct EventFields {
  std::string_view cat, name, dims, types, strides, concrete;
  Importer::Cat c = Importer::Cat::skip;
  std::string_view ts_raw, dur_raw;
  int64_t external = -1, correlation = -1, device = 0, regs = 0, shared = 0, bytes = 0, graph = -1;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  bool have_dur = false, have_name = true;
  // The first arg of an unexpected type or value: whether it matters depends on the event's kind.
  const char* bad_launch = nullptr;  // grid, block, registers, shared memory, device, bytes, graph id
  const char* bad_link = nullptr;    // External id, correlation
  const char* bad_shape = nullptr;   // Input Dims/type/Strides
};

// The members of "args" that the importer uses; keys are matched on their first byte, then in place.
inline void read_args(od::object args, EventFields& f) {
  for (auto a : args) {
    const char* ak = a.key().value().raw();
    switch (ak[0]) {
      case 'E':
      case 'e':
        if (key_is(ak + 1, "xternal id")) int_arg(a.value(), f.external, "External id", f.bad_link);
        break;
      case 'c':
        if (key_is(ak, "correlation") || key_is(ak, "correlation id")) int_arg(a.value(), f.correlation, "correlation", f.bad_link);
        break;
      case 'd':
        if (key_is(ak, "device")) {
          if (int_arg(a.value(), f.device, "device", f.bad_launch) && (f.device < 0 || f.device > 255)) {
            if (f.bad_launch == nullptr) f.bad_launch = "device";
          }
        }
        break;
      case 'g':
      case 'b':
        if (key_is(ak, "grid")) {
          dim_arg(a.value(), f.grid, "grid", f.bad_launch);
        } else if (key_is(ak, "block")) {
          dim_arg(a.value(), f.block, "block", f.bad_launch);
        } else if (key_is(ak, "bytes")) {
          if (int_arg(a.value(), f.bytes, "bytes", f.bad_launch) && f.bytes < 0 && f.bad_launch == nullptr) f.bad_launch = "bytes";
        } else if (key_is(ak, "graph id")) {
          if (int_arg(a.value(), f.graph, "graph id", f.bad_launch) && f.graph < 0) f.graph = -1;
        }
        break;
      case 'r':
        if (key_is(ak, "registers per thread")) {
          if (int_arg(a.value(), f.regs, "registers per thread", f.bad_launch) && (f.regs < 0 || f.regs > 65536) && f.bad_launch == nullptr) {
            f.bad_launch = "registers per thread";
          }
        }
        break;
      case 's':
        if (key_is(ak, "shared memory")) {
          if (int_arg(a.value(), f.shared, "shared memory", f.bad_launch) && (f.shared < 0 || f.shared > INT32_MAX) && f.bad_launch == nullptr) {
            f.bad_launch = "shared memory";
          }
        }
        break;
      case 'C':
        if (key_is(ak, "Concrete Inputs")) {
          const char* bad = nullptr;  // not an array: read as absent (the shapes are kept)
          f.concrete = raw_array(a.value(), bad, "Concrete Inputs");
        }
        break;
      case 'I':
        if (key_is(ak, "Input Dims") || key_is(ak, "Input dims")) {
          f.dims = raw_array(a.value(), f.bad_shape, "Input Dims");
        } else if (key_is(ak, "Input type")) {
          f.types = raw_array(a.value(), f.bad_shape, "Input type");
        } else if (key_is(ak, "Input Strides")) {
          f.strides = raw_array(a.value(), f.bad_shape, "Input Strides");
        }
        break;
      default:
        break;
    }
  }
}

// The event's members. Stops at a category the importer does not use (flows, metadata, python
// functions ...): "cat" precedes "args" in Kineto's output, so the rest is not read.
inline void read_fields(od::object obj, EventFields& f) {
  for (auto field : obj) {
    const char* k = field.key().value().raw();
    switch (k[0]) {
      case 'c':
        if (key_is(k, "cat")) {
          if (field.value().get_string().get(f.cat) != simdjson::SUCCESS) f.cat = {};
          f.c = category(f.cat);
          if (f.c == Importer::Cat::skip) return;
        }
        break;
      case 'n':
        if (key_is(k, "name")) {
          const auto err = field.value().get_string().get(f.name);
          if (err == simdjson::STRING_ERROR || err == simdjson::INCORRECT_TYPE) {
            f.have_name = false;
          } else if (err != simdjson::SUCCESS) {
            throw simdjson::simdjson_error(err);
          }
        }
        break;
      case 't':
        if (key_is(k, "ts")) f.ts_raw = checked_token(field.value().raw_json_token());
        break;
      case 'd':
        if (key_is(k, "dur")) {
          f.dur_raw = checked_token(field.value().raw_json_token());
          f.have_dur = true;
        }
        break;
      case 'a': {
        if (!key_is(k, "args")) break;
        od::object args;
        if (const auto err = field.value().get_object().get(args); err != simdjson::SUCCESS) {
          if (err != simdjson::INCORRECT_TYPE) throw simdjson::simdjson_error(err);
          break;  // "args" that is not an object: as if absent
        }
        read_args(args, f);
        break;
      }
      default:
        break;
    }
  }
}

// A CPU op: its signature (name and shapes), found later from its kernels' External id.
inline void op_event(Partial& p, EventFields& f) {
  if (f.bad_link != nullptr) return skip_event(p, fmt::format("an op event's \"{}\" is not a non-negative integer", f.bad_link));
  if (f.external < 0) return;
  if (f.bad_shape != nullptr) f.dims = f.types = f.strides = f.concrete = {};  // the op is kept, without shapes
  if (!f.dims.empty()) p.shapes = true;
  p.key.assign(f.name).append("\x1f").append(f.dims).append("\x1f").append(f.types).append("\x1f").append(f.strides);
  p.key.append("\x1f").append(f.concrete);
  auto [it, inserted] = p.sig_ids.emplace(p.key, static_cast<uint32_t>(p.sigs.size()));
  if (inserted) {
    p.sigs.push_back({std::string(f.name), std::string(f.dims), std::string(f.types), std::string(f.strides), std::string(f.concrete)});
  }
  p.ext_sig.emplace_back(f.external, it->second);
}

// The launch identity of a GPU activity: name, kind, device, launch shape, bytes of a copy, graph.
inline void launch_key(std::string& key, const EventFields& f, bool copy) {
  key.clear();
  key.append(f.name).append("\x1f");
  key.append(std::to_string(static_cast<int>(f.c))).append(",").append(std::to_string(f.device));
  for (int i = 0; i < 3; ++i) key.append(",").append(std::to_string(f.grid[i])).append(",").append(std::to_string(f.block[i]));
  key.append(",").append(std::to_string(f.regs)).append(",").append(std::to_string(f.shared)).append(",");
  if (copy) key.append(std::to_string(f.bytes));
  key.append(",").append(std::to_string(f.graph));
}

// The row of a launch identity seen for the first time.
KernelRow launch_row(const EventFields& f, bool memset, bool memcpy) {
  KernelRow r;
  r.name = std::string(f.name);
  r.kind = memset ? "memset" : memcpy ? "memcpy" : "kernel";
  r.device = static_cast<uint32_t>(f.device);
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = f.grid[i];
    r.block[i] = f.block[i];
  }
  r.registers = static_cast<uint32_t>(f.regs);
  r.shared_bytes = static_cast<uint32_t>(f.shared);
  r.graph = f.graph;
  if (memset || memcpy) {
    r.bytes = static_cast<uint64_t>(f.bytes);
    r.copy_kind = copy_kind_of(f.name, memset);
  }
  return r;
}

// A kernel, memcpy or memset: its launch identity and one pending activity (linked in finish()).
inline void gpu_event(Partial& p, EventFields& f) {
  if (!f.have_dur) return skip_event(p, "a GPU event has no \"dur\"");
  const auto start = us_to_ns(f.ts_raw);
  const auto dur = us_to_ns(f.dur_raw);
  if (!start) return skip_event(p, "a GPU event's \"ts\" is not a number");
  if (!dur || *dur < 0) return skip_event(p, "a GPU event's \"dur\" is not a non-negative number");
  if (f.bad_launch != nullptr) return skip_event(p, fmt::format("a GPU event's \"{}\" is not a valid value (negative, too large or of the wrong type)", f.bad_launch));
  if (f.bad_link != nullptr) {  // the kernel is kept; only its link to the launching op is lost
    f.external = -1;
    f.correlation = -1;
  }
  const bool memset = f.c == Importer::Cat::memset, memcpy = f.c == Importer::Cat::memcpy;
  if (f.graph >= 0) ++p.graph_kernels;
  launch_key(p.key, f, memset || memcpy);
  auto [it, inserted] = p.launch_ids.emplace(p.key, static_cast<uint32_t>(p.launches.size()));
  if (inserted) p.launches.push_back(launch_row(f, memset, memcpy));
  p.pending.push_back({it->second, static_cast<uint32_t>(f.correlation < 0 || f.correlation > UINT32_MAX ? 0 : f.correlation), f.external, *start, *dur});
  if (memset) {
    ++p.c.memsets;
    p.c.memset_ns += *dur;
  } else if (memcpy) {
    ++p.c.memcpys;
    p.c.memcpy_ns += *dur;
  } else {
    ++p.c.kernels;
    p.c.kernel_ns += *dur;
  }
}

void Importer::event(Partial& p, od::object obj) {
  EventFields f;
  read_fields(obj, f);
  ++p.c.events;
  if (f.c == Cat::skip) return;
  const char* what = f.c == Cat::op ? "an op" : f.c == Cat::runtime ? "a runtime" : f.c == Cat::annotation ? "an annotation" : "a GPU";
  if (!f.have_name) return skip_event(p, std::string(what) + " event's \"name\" is not a string");
  if (f.name.size() > kMaxName) return skip_event(p, std::string(what) + " event's \"name\" is longer than 1 MiB");
  if (f.c == Cat::op) return op_event(p, f);
  if (f.c == Cat::runtime) {  // cudaLaunchKernel, cudaGraphLaunch ...: correlation → the op's External id
    if (f.bad_link != nullptr) return skip_event(p, fmt::format("a runtime event's \"{}\" is not an integer", f.bad_link));
    if (f.correlation >= 0 && f.correlation <= UINT32_MAX && f.external >= 0) p.corr_ext.emplace_back(static_cast<uint32_t>(f.correlation), f.external);
    return;
  }
  if (f.c == Cat::annotation) {  // record_function ranges: the phases of the run
    const auto a = us_to_ns(f.ts_raw);
    const auto d = f.have_dur ? us_to_ns(f.dur_raw) : std::optional<int64_t>(0);
    if (a && d && *d >= 0) p.annotations.push_back({std::string(f.name), 0, *a, *a + *d});
    return;
  }
  gpu_event(p, f);
}

Result<void> Importer::parse_events(Partial& p, char* begin, std::size_t len, std::size_t capacity, uint64_t file_offset) {
  // begin[-1] is ours to set; begin[len] is the ',' after the last event (or the array's ']').
  struct Restore {
    char* at;
    char a, b;
    std::size_t n;
    ~Restore() {
      at[-1] = a;
      at[n] = b;
    }
  } restore_bytes{begin, begin[-1], begin[len], len};
  begin[-1] = '[';
  begin[len] = ']';
  const char* doc_begin = begin - 1;
  try {
    od::document doc = p.parser.iterate(doc_begin, len + 2, capacity + 1);
    for (auto ev : doc.get_array()) event(p, ev.get_object());
  } catch (const simdjson::simdjson_error& e) {
    return make_error(Errc::parse, path_ + ": invalid trace event JSON in traceEvents at or after byte " + std::to_string(file_offset) +
                                       ": " + e.what());
  } catch (const std::runtime_error& e) {
    return make_error(Errc::parse, path_ + ": " + e.what() + " in traceEvents at or after byte " + std::to_string(file_offset));
  }
  return {};
}

Result<void> Importer::members(const std::string& outer) {
  // `outer` is the top-level object with an empty traceEvents array: small metadata.
  try {
    simdjson::padded_string ps(outer);
    od::document doc = parts_[0]->parser.iterate(ps);
    od::object top = doc.get_object();
    for (auto field : top) {
      std::string_view k = field.unescaped_key();
      if (k == "deviceProperties") {
        for (auto d : field.value().get_array()) {
          std::string_view n;
          if (d.get_object().find_field_unordered("name").get_string().get(n) == simdjson::SUCCESS) t_.gpus.emplace_back(n);
        }
      } else if (k == "distributedInfo") {
        int64_t r = 0;
        if (field.value().get_object().find_field_unordered("rank").get_int64().get(r) == simdjson::SUCCESS) rank_ = static_cast<int>(r);
      } else if (k == "record_shapes") {
        int64_t v = 0;
        if (field.value().get_int64().get(v) == simdjson::SUCCESS && v != 0) parts_[0]->shapes = true;
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    return make_error(Errc::parse, path_ + ": invalid JSON outside traceEvents: " + e.what());
  }
  return {};
}

// The last "}" [ws] "," [ws] "{" of data[0, size): a likely boundary between two events (raw
// whitespace never occurs inside a JSON string, so only nested objects can fool it, and those
// make the piece fail to parse). Returns the position of the ',' or SIZE_MAX.
std::size_t guess_cut(const char* data, std::size_t size) {
  for (std::size_t p = size; p-- > 1;) {
    if (data[p] != '{') continue;
    std::size_t q = p;
    while (q > 0 && is_ws(data[q - 1])) --q;
    if (q == 0 || data[q - 1] != ',') continue;
    const std::size_t comma = q - 1;
    std::size_t r = comma;
    while (r > 0 && is_ws(data[r - 1])) --r;
    if (r > 0 && data[r - 1] == '}') return comma;
  }
  return SIZE_MAX;
}

// Where the exact scanner ends the complete events of data[0, size): the ',' after the last one at
// depth 0, or the array's closing ']' (array_end); SIZE_MAX when none is complete.
struct ExactCut {
  std::size_t end = SIZE_MAX;
  bool array_end = false;
};
ExactCut exact_cut(const char* data, std::size_t size) {
  Scanner ex;
  ExactCut cut;
  for (std::size_t p = 0; p < size; ++p) {
    const auto e = ex.feed(data[p]);
    if (ex.depth < 0) {
      cut.end = p;
      cut.array_end = true;
      break;
    }
    if (ex.depth == 0 && e == Scanner::comma) cut.end = p;
  }
  return cut;
}

// A worker's copy of data[0, cut) and the ',' after it.
Piece piece_of(const char* data, std::size_t cut, uint64_t offset) {
  Piece piece;
  piece.buf.resize(1 + cut + kPad);
  std::memcpy(piece.buf.data() + 1, data, cut + 1);
  piece.len = cut;
  piece.offset = offset;
  return piece;
}

Result<void> Importer::run(Input& in, bool& retry) {
  retry = false;
  parts_.clear();
  parts_.push_back(std::make_unique<Partial>());
  Pool pool;  // its workers write into parts_: joined before run() returns, on every path
  if (threads_ > 1) start_workers(pool);
  Window w;
  w.buf.resize(1 + chunk_ + kPad);
  // 1. The members before the array, up to "traceEvents": [.
  Scanner sc;
  std::string outer;  // the top-level object without the events
  if (auto r = read_head(in, w, sc, outer); !r) return r;
  // 2. The events.
  if (auto r = read_events(in, w, pool); !r) return r;
  pool.close();
  if (pool.failed.load()) {
    retry = true;
    return {};
  }
  // 3. The members after the array.
  if (auto r = read_tail(in, w, sc, outer); !r) return r;
  if (auto m = members(outer); !m) return m;
  finish();
  return {};
}

void Importer::start_workers(Pool& pool) {
  std::vector<Partial*> parts;
  for (int i = 0; i < threads_; ++i) {
    parts_.push_back(std::make_unique<Partial>());
    parts.push_back(parts_.back().get());
  }
  pool.start(parts, [this](Partial& part, Piece& piece) {
    return static_cast<bool>(parse_events(part, piece.buf.data() + 1, piece.len, piece.buf.size() - 1, piece.offset));
  });
}

// Reads up to a chunk more into the window (grown to hold it, up to one 64 MiB event).
Result<void> Importer::fill(Input& in, Window& w) {
  if (w.eof) return {};
  if (w.buf.size() < 1 + w.size + chunk_ + kPad) {
    if (w.size + chunk_ > kMaxPiece) return make_error(Errc::parse, path_ + ": an event larger than 64 MiB (the limit for one trace event) at byte " + std::to_string(w.consumed));
    w.buf.resize(1 + w.size + chunk_ + kPad);
  }
  auto got = in.read(w.buf.data() + 1 + w.size, chunk_);
  if (!got) return got.error();
  if (*got == 0) w.eof = true;
  w.size += *got;
  const uint64_t before = t_.bytes;
  t_.bytes += *got;
  if (progress_ && (before >> 28) != (t_.bytes >> 28)) progress_(path_ + ": " + format_bytes(t_.bytes) + " read");
  return {};
}

// The bytes before the events, kept in `outer`, through the '[' of the top-level "traceEvents".
Result<void> Importer::read_head(Input& in, Window& w, Scanner& sc, std::string& outer) {
  std::string last_string;
  std::size_t string_start = 0;
  bool found = false;
  while (!found) {
    if (w.size == 0) {
      if (auto f = fill(in, w); !f) return f;
      if (w.size == 0) {
        return make_error(Errc::parse, path_ + (w.consumed == 0 ? ": empty file" : ": no \"traceEvents\" array (not a Kineto/PyTorch profiler trace)"));
      }
    }
    std::size_t i = 0;
    for (; i < w.size; ++i) {
      const char c = w.buf[1 + i];
      const bool was_in_string = sc.in_string;
      const auto e = sc.feed(c);
      if (!was_in_string && sc.in_string) string_start = outer.size() + 1;
      if (w.consumed + i == 0 && c != '{' && !is_ws(c)) {
        return make_error(Errc::parse, path_ + ": not a Kineto/PyTorch profiler trace (a JSON object is expected, got '" +
                                           std::string(1, c) + "' at byte 0)");
      }
      if (sc.depth < 0 || (sc.depth == 0 && e == Scanner::close)) {
        return make_error(Errc::parse, path_ + ": no \"traceEvents\" array (not a Kineto/PyTorch profiler trace)");
      }
      outer.push_back(c);
      if (outer.size() > kMaxPiece) return make_error(Errc::parse, path_ + ": no \"traceEvents\" array in the first 64 MiB");
      if (e == Scanner::string_end && sc.depth == 1) last_string.assign(outer, string_start, outer.size() - 1 - string_start);
      if (e == Scanner::open && sc.depth == 2 && c == '[' && last_string == "traceEvents") {
        found = true;
        ++i;
        break;
      }
    }
    w.drop(i);
  }
  return {};
}

// The events, through the array's ']': pieces cut at guessed boundaries go to the workers
// (parallel) or are parsed here (serial); where no guess fits or one fails, the exact scanner cuts.
Result<void> Importer::read_events(Input& in, Window& w, Pool& pool) {
  const bool parallel = pool.size() > 0;
  Partial& main = *parts_[0];
  // In parallel mode the data after a wrongly guessed cut is garbage: an error there only means
  // "read again serially", which then finds the exact place of any real damage.
  auto bad = [&](Error e) -> Result<void> {
    if (!parallel) return e;
    pool.failed = true;
    return {};
  };
  for (;;) {
    if (pool.failed.load()) break;
    if (!w.eof && w.size < chunk_) {
      if (auto f = fill(in, w); !f) return f;
      continue;
    }
    char* data = w.data();
    // Leading whitespace and the separating comma (after a previous piece).
    std::size_t lead = 0;
    while (lead < w.size && (is_ws(data[lead]) || data[lead] == ',')) ++lead;
    if (lead > 0) {
      w.drop(lead);
      continue;
    }
    if (w.size == 0) {
      if (w.eof) {
        if (auto r = bad(make_error(Errc::parse, path_ + ": truncated at byte " + std::to_string(w.consumed) + " (inside traceEvents)")); !r) return r;
        break;
      }
      continue;
    }
    if (data[0] == ']') {  // the array's end
      w.drop(1);
      break;
    }
    const std::size_t cut = w.eof ? SIZE_MAX : guess_cut(data, w.size);
    if (cut != SIZE_MAX && parallel) {  // hand the piece to a worker; keep the rest
      pool.push(piece_of(data, cut, w.consumed));
      w.drop(cut);
      continue;
    }
    if (cut != SIZE_MAX && parse_guess(main, w, cut)) {
      w.drop(cut);
      continue;
    }
    // Exact cut: the last complete event at depth 0 (or the array's closing ']').
    const ExactCut ex = exact_cut(data, w.size);
    if (ex.end == SIZE_MAX) {
      if (w.eof) {
        if (auto r = bad(make_error(Errc::parse, path_ + ": truncated at byte " + std::to_string(w.consumed + w.size) +
                                                     " (inside a trace event that starts at byte " + std::to_string(w.consumed) + ")"));
            !r) {
          return r;
        }
        break;
      }
      if (auto f = fill(in, w); !f) return f;  // an event longer than the buffer: read more
      continue;
    }
    if (parallel) pool.wait_empty();  // let the workers take what precedes this piece first (errors say where)
    if (pool.failed.load()) break;
    auto ok = parse_events(main, data, ex.end, w.buf.size() - 1, w.consumed);
    if (!ok) {
      if (auto r = bad(ok.error()); !r) return r;
      break;
    }
    w.drop(ex.end);
    if (ex.array_end) {
      w.drop(1);
      break;
    }
  }
  return {};
}

// Serial mode: the events up to a guessed cut, parsed in place; false, and `main` as it was, when
// the guess was inside an event or the data is bad.
bool Importer::parse_guess(Partial& main, Window& w, std::size_t cut) {
  const PartialMark mark(main);
  if (parse_events(main, w.data(), cut, w.buf.size() - 1, w.consumed)) return true;
  mark.restore(main);
  return false;
}

// The bytes after the events (the array's ']' restored), up to the end of the top-level object.
Result<void> Importer::read_tail(Input& in, Window& w, Scanner& sc, std::string& outer) {
  outer += "]";
  for (;;) {
    for (std::size_t i = 0; i < w.size; ++i) {
      outer.push_back(w.buf[1 + i]);
      sc.feed(w.buf[1 + i]);
    }
    if (outer.size() > kMaxPiece) return make_error(Errc::parse, path_ + ": more than 64 MiB after traceEvents");
    w.consumed += w.size;
    w.size = 0;
    if (w.eof) break;
    if (auto f = fill(in, w); !f) return f;
  }
  while (!outer.empty() && is_ws(outer.back())) outer.pop_back();
  if (outer.empty() || outer.back() != '}') {
    return make_error(Errc::parse, path_ + ": truncated at byte " + std::to_string(w.consumed) + " (after traceEvents: the trace object is not closed)");
  }
  return {};
}

void Importer::finish() {
  // Merge the partials: launch identities and op signatures to global ids.
  std::unordered_map<std::string, uint32_t> launch_ids, sig_ids;
  std::vector<KernelRow> launches;
  std::vector<OpSig> sigs;
  std::vector<uint32_t> op_by_ext;  // sig + 1, dense by External id
  std::unordered_map<int64_t, uint32_t> op_by_ext_sparse;
  std::unordered_map<uint32_t, int64_t> ext_by_corr;
  bool shapes = false;
  uint64_t skipped = 0;
  std::string skip_why;
  std::vector<std::vector<uint32_t>> launch_map(parts_.size());
  for (std::size_t pi = 0; pi < parts_.size(); ++pi) {
    Partial& p = *parts_[pi];
    shapes |= p.shapes;
    t_.kernels += p.c.kernels;
    t_.memcpys += p.c.memcpys;
    t_.memsets += p.c.memsets;
    t_.events += p.c.events;
    t_.kernel_ns += p.c.kernel_ns;
    t_.memcpy_ns += p.c.memcpy_ns;
    t_.memset_ns += p.c.memset_ns;
    t_.graph_kernels += p.graph_kernels;
    if (p.skipped > 0 && skip_why.empty()) skip_why = p.first_skip;
    skipped += p.skipped;
    for (const auto& [key, local] : p.launch_ids) {
      auto [it, inserted] = launch_ids.emplace(key, static_cast<uint32_t>(launches.size()));
      if (inserted) launches.push_back(std::move(p.launches[local]));
      if (launch_map[pi].size() <= local) launch_map[pi].resize(p.launches.size());
      launch_map[pi][local] = it->second;
    }
    std::vector<uint32_t> sig_map(p.sigs.size());
    for (const auto& [key, local] : p.sig_ids) {
      auto [it, inserted] = sig_ids.emplace(key, static_cast<uint32_t>(sigs.size()));
      if (inserted) sigs.push_back(p.sigs[local]);
      sig_map[local] = it->second;
    }
    for (const auto& [ext, local] : p.ext_sig) {
      const uint32_t g = sig_map[local] + 1;
      if (ext < (int64_t{1} << 26)) {
        const auto e = static_cast<std::size_t>(ext);
        if (e >= op_by_ext.size()) op_by_ext.resize(std::max(e + 1, op_by_ext.size() * 2), 0);
        op_by_ext[e] = g;
      } else {
        op_by_ext_sparse[ext] = g;
      }
    }
    for (const auto& [corr, ext] : p.corr_ext) ext_by_corr[corr] = ext;
    p.ext_sig = {};
    p.corr_ext = {};
    p.launches = {};
    p.launch_ids = {};
    p.sig_ids = {};
  }
  auto lookup = [&](int64_t e) -> uint32_t {
    if (e < 0) return 0;
    if (e < static_cast<int64_t>(op_by_ext.size())) return op_by_ext[static_cast<std::size_t>(e)];
    auto it = op_by_ext_sparse.find(e);
    return it != op_by_ext_sparse.end() ? it->second : 0;
  };
  // Kernel → op: External id, else correlation id → runtime launch → External id.
  std::unordered_map<uint64_t, std::size_t> row_of;  // (launch, sig + 1) → row
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> intervals;  // device → [start, end)
  for (std::size_t pi = 0; pi < parts_.size(); ++pi) {
    for (const Pending& pd : parts_[pi]->pending) {
      uint32_t s = lookup(pd.external);
      if (s == 0 && pd.correlation != 0) {
        auto it = ext_by_corr.find(pd.correlation);
        if (it != ext_by_corr.end()) s = lookup(it->second);
      }
      const uint32_t launch = launch_map[pi][pd.launch];
      auto [it, inserted] = row_of.emplace((static_cast<uint64_t>(launch) << 32) | s, t_.rows.size());
      if (inserted) {
        KernelRow r = launches[launch];
        if (s > 0) {
          const OpSig& o = sigs[s - 1];
          r.op = o.name;
          r.input_dims = o.dims;
          r.input_types = o.types;
          r.input_strides = o.strides;
          r.input_concrete = o.concrete;
        }
        r.rank = rank_;
        r.min_ns = pd.dur_ns;
        r.max_ns = pd.dur_ns;
        t_.rows.push_back(std::move(r));
      }
      KernelRow& r = t_.rows[it->second];
      t_.activities.push_back({static_cast<uint32_t>(it->second), (static_cast<uint32_t>(rank_) << 8) | (launches[launch].device & 0xffu),
                               pd.start_ns, pd.dur_ns});
      ++r.count;
      r.total_ns += pd.dur_ns;
      r.min_ns = std::min(r.min_ns, pd.dur_ns);
      r.max_ns = std::max(r.max_ns, pd.dur_ns);
      intervals[launches[launch].device].emplace_back(pd.start_ns, pd.start_ns + pd.dur_ns);
    }
    parts_[pi]->pending = {};
    for (TraceRange& a : parts_[pi]->annotations) {
      a.rank = rank_;
      t_.annotations.push_back(std::move(a));
    }
    parts_[pi]->annotations = {};
  }
  for (auto& [dev, iv] : intervals) {
    const replay_detail::BusySpan b = replay_detail::busy_and_span(iv);
    t_.busy_ns += b.busy_ns;
    t_.span_ns += b.span_ns;
    ++t_.devices;
  }
  if (shapes) t_.shapes = true;
  if (skipped > 0) {
    t_.skipped_events += skipped;
    t_.warnings.push_back(fmt::format("{}: skipped {} unreadable event{} (the first: {}); the rest of the trace is read", path_, skipped,
                                      skipped == 1 ? "" : "s", skip_why));
  }
}

}  // namespace

Result<void> import_trace_file(const std::string& path, int rank, KernelTable& t, const KernelTableOptions& o, bool& jouleprof_file) {
  jouleprof_file = false;
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  auto in = std::make_unique<Input>();
  if (auto r = in->open(path); !r) return r;
  if (!in->gzip() && in->head().size() == sizeof(trace_format::kMagic) &&
      std::memcmp(in->head().data(), trace_format::kMagic, sizeof(trace_format::kMagic)) == 0) {
    jouleprof_file = true;
    if (in->is_pipe()) return make_error(Errc::invalid_argument, path + ": a jouleprof trace file is read from a regular file, not a pipe");
    return {};
  }
  // A pipe is read once: serially (exact cuts), so that no second pass is needed.
  if (in->is_pipe()) threads = 1;
  // Parallel reads may need a second, serial pass: the table as it was before this file.
  std::optional<KernelTable> before;
  if (threads > 1) before = t;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt > 0) {
      in = std::make_unique<Input>();
      if (auto r = in->open(path); !r) return r;
    }
    Importer imp(t, rank, path, o.chunk_bytes, attempt == 0 ? threads : 1, o.progress);
    bool retry = false;
    auto r = imp.run(*in, retry);
    if (!r || !retry) return r;
    if (!before) break;
    t = *before;  // a piece did not parse in parallel: read again serially (exact cuts, exact error positions)
  }
  return make_error(Errc::internal, path + ": import failed");
}

Result<void> import_kineto(const std::string& path, int rank, KernelTable& t, const KernelTableOptions& o) {
  bool own = false;
  auto r = import_trace_file(path, rank, t, o, own);
  if (r && own) return make_error(Errc::invalid_argument, path + ": a jouleprof trace file, not a Kineto trace");
  return r;
}

}  // namespace jouleprof
