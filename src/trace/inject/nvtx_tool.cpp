#include "nvtx_tool.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "writer.hpp"

namespace jouleprof::inject {
namespace {

using namespace trace_format;

NvtxHooks g_hooks;
std::atomic<uint64_t> g_next_id{1};
constexpr std::size_t kBatch = 1024;

// Names: a global id per distinct string (under g_names_lock, on a thread's first sight of it);
// each thread keeps its own map so a repeated name costs one lookup without a lock.
std::mutex g_names_lock;
std::deque<std::string> g_names;  // stable addresses: registered strings and domains point here
std::unordered_map<std::string_view, uint32_t> g_name_ids;
std::vector<uint32_t> g_writer_ids;  // global id → the writer's string id (under the writer's lock)
uint64_t g_writer_session = 0;       // the file g_writer_ids refer to (string ids are per file)

uint32_t global_name_id(std::string_view s) {
  std::lock_guard<std::mutex> lock(g_names_lock);
  if (auto it = g_name_ids.find(s); it != g_name_ids.end()) return it->second;
  g_names.emplace_back(s);
  const auto id = static_cast<uint32_t>(g_names.size());  // 0: no name
  g_name_ids.emplace(g_names.back(), id);
  return id;
}

struct Event {
  uint64_t timestamp_ns, id, thread;
  uint32_t flags, object_kind, name, domain;
};

struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

// One per thread that records, never freed (a thread that ends leaves its events for the next
// write; threads that record NVTX ranges are few); listed so the writer can drain them all.
struct ThreadEvents {
  std::mutex lock;
  std::vector<Event> events;
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> names;
  std::unordered_map<uint32_t, std::vector<uint64_t>> open;  ///< per domain: ids of pushed, unpopped ranges
  uint64_t thread = 0;
};
std::mutex g_threads_lock;
std::vector<ThreadEvents*> g_threads;
thread_local ThreadEvents* t_events = nullptr;

ThreadEvents& mine() {
  if (t_events == nullptr) {
    auto* t = new ThreadEvents;
    t->thread = g_hooks.thread_id != nullptr ? g_hooks.thread_id() : 0;
    t->events.reserve(kBatch);
    std::lock_guard<std::mutex> lock(g_threads_lock);
    g_threads.push_back(t);
    t_events = t;
  }
  return *t_events;
}

uint32_t name_id(ThreadEvents& t, const char* s) {
  if (s == nullptr) return 0;
  auto it = t.names.find(std::string_view(s));
  if (it != t.names.end()) return it->second;
  const uint32_t id = global_name_id(s);
  t.names.emplace(s, id);
  return id;
}

std::string narrow(const wchar_t* w) {
  std::string s;
  for (; w != nullptr && *w != 0; ++w) s.push_back(*w < 128 ? static_cast<char>(*w) : '?');
  return s;
}

// A registered string or a domain: a handle is a pointer to its global name id.
std::deque<uint32_t> g_handles;  // under g_names_lock
uint32_t* new_handle(const std::string& s) {
  const uint32_t id = global_name_id(s);
  std::lock_guard<std::mutex> lock(g_names_lock);
  g_handles.push_back(id);
  return &g_handles.back();
}
uint32_t handle_id(const void* h) { return h != nullptr ? *static_cast<const uint32_t*>(h) : 0; }

uint32_t message_id(ThreadEvents& t, const nvtxEventAttributes_t* a) {
  if (a == nullptr) return 0;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return name_id(t, a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return name_id(t, narrow(a->message.unicode).c_str());
    case NVTX_MESSAGE_TYPE_REGISTERED: return handle_id(a->message.registered);
    default: return 0;
  }
}

// This thread's anchor record as last switched; initialize() enables it.
thread_local bool t_anchor_record = true;

void anchor() {
  if (g_hooks.anchor == nullptr) return;
  const bool on = g_hooks.anchoring == nullptr || g_hooks.anchoring->load(std::memory_order_relaxed);
  if (g_hooks.anchor_record != nullptr && t_anchor_record != on) {
    g_hooks.anchor_record(on);
    t_anchor_record = on;
  }
  if (on) g_hooks.anchor();
}

void record(ThreadEvents& t, uint64_t id, uint32_t flags, uint32_t object_kind, uint32_t name, uint32_t domain) {
  const uint64_t ts = g_hooks.now_ns != nullptr ? g_hooks.now_ns() : 0;
  bool full = false;
  {
    std::lock_guard<std::mutex> lock(t.lock);
    t.events.push_back({ts, id, t.thread, flags, object_kind, name, domain});
    full = t.events.size() % kBatch == 0;  // (kept until the file opens: ask again every batch)
  }
  // After the timestamp: the anchor's correlation id follows the event in the launch sequence.
  if (flags != marker_instant) anchor();
  if (full && g_hooks.flush != nullptr) g_hooks.flush();
}

bool recording() { return g_hooks.recording == nullptr || g_hooks.recording->load(std::memory_order_relaxed); }

// Pausing: a range opened while paused is not recorded, nor its end. Push/pop keep a 0 on the
// thread's stack for it; a start/end range's id carries kUnrecorded (its end may come on another
// thread). The end of a range recorded before the pause is recorded (its timestamp only).
constexpr uint64_t kUnrecorded = uint64_t{1} << 63;

constexpr uint32_t kThread = 2, kProcess = 1;  // CUPTI_ACTIVITY_OBJECT_THREAD / _PROCESS

// Push/pop nest per thread and domain (NCCL's ranges do not close the program's): a pop ends the
// domain's innermost pushed range, by id. Start/end ranges are the process's and may end on
// another thread (matched by id).
int push(uint32_t name, uint32_t domain) {
  ThreadEvents& t = mine();
  if (!recording()) {
    t.open[domain].push_back(0);
    return static_cast<int>(t.open[domain].size()) - 1;
  }
  const uint64_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  t.open[domain].push_back(id);  // (only this thread touches `open`)
  record(t, id, marker_start, kThread, name, domain);
  return static_cast<int>(t.open[domain].size()) - 1;
}
int pop(uint32_t domain) {
  ThreadEvents& t = mine();
  auto& stack = t.open[domain];
  if (stack.empty()) {  // an unbalanced pop: NVTX's no-op, but the anchor still marks the point
    if (recording()) anchor();
    return -1;
  }
  const uint64_t id = stack.back();
  stack.pop_back();
  if (id == 0) return static_cast<int>(stack.size());
  record(t, id, marker_end, kThread, 0, domain);
  return static_cast<int>(stack.size());
}
nvtxRangeId_t start(uint32_t name, uint32_t domain) {
  if (!recording()) return g_next_id.fetch_add(1, std::memory_order_relaxed) | kUnrecorded;
  const uint64_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  record(mine(), id, marker_start, kProcess, name, domain);
  return id;
}
void end(nvtxRangeId_t id, uint32_t domain) {
  if ((id & kUnrecorded) == 0) record(mine(), id, marker_end, kProcess, 0, domain);
}
void mark(uint32_t name, uint32_t domain) {
  if (recording()) record(mine(), g_next_id.fetch_add(1), marker_instant, kThread, name, domain);
}

int NVTX_API push_ex(const nvtxEventAttributes_t* a) { return push(message_id(mine(), a), 0); }
int NVTX_API push_a(const char* m) { return push(name_id(mine(), m), 0); }
int NVTX_API push_w(const wchar_t* m) { return push(name_id(mine(), narrow(m).c_str()), 0); }
int NVTX_API pop_() { return pop(0); }
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) { return start(message_id(mine(), a), 0); }
nvtxRangeId_t NVTX_API start_a(const char* m) { return start(name_id(mine(), m), 0); }
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) { return start(name_id(mine(), narrow(m).c_str()), 0); }
void NVTX_API end_(nvtxRangeId_t id) { end(id, 0); }
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) { mark(message_id(mine(), a), 0); }
void NVTX_API mark_a(const char* m) { mark(name_id(mine(), m), 0); }
void NVTX_API mark_w(const wchar_t* m) { mark(name_id(mine(), narrow(m).c_str()), 0); }
int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { return push(message_id(mine(), a), handle_id(d)); }
int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop(handle_id(d)); }
nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start(message_id(mine(), a), handle_id(d));
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { end(id, handle_id(d)); }
void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { mark(message_id(mine(), a), handle_id(d)); }
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new_handle(name != nullptr ? name : ""));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) { return reinterpret_cast<nvtxDomainHandle_t>(new_handle(narrow(name))); }
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(new_handle(s != nullptr ? s : ""));
}
nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t, const wchar_t* s) { return reinterpret_cast<nvtxStringHandle_t>(new_handle(narrow(s))); }

template <class F>
NvtxFunctionPointer fp(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

int install_nvtx_tool(NvtxGetExportTableFunc_t get, const NvtxHooks& hooks) {
  const auto* callbacks = get != nullptr ? static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS)) : nullptr;
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  g_hooks = hooks;
  auto fill = [&](NvtxCallbackModule module, std::initializer_list<std::pair<int, NvtxFunctionPointer>> entries) {
    NvtxFunctionTable table = nullptr;
    unsigned size = 0;
    if (callbacks->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return;
    for (const auto& [cbid, f] : entries) {
      if (static_cast<unsigned>(cbid) < size && table[cbid] != nullptr) *table[cbid] = f;
    }
  };
  fill(NVTX_CB_MODULE_CORE, {{NVTX_CBID_CORE_MarkEx, fp(mark_ex)},
                             {NVTX_CBID_CORE_MarkA, fp(mark_a)},
                             {NVTX_CBID_CORE_MarkW, fp(mark_w)},
                             {NVTX_CBID_CORE_RangeStartEx, fp(start_ex)},
                             {NVTX_CBID_CORE_RangeStartA, fp(start_a)},
                             {NVTX_CBID_CORE_RangeStartW, fp(start_w)},
                             {NVTX_CBID_CORE_RangeEnd, fp(end_)},
                             {NVTX_CBID_CORE_RangePushEx, fp(push_ex)},
                             {NVTX_CBID_CORE_RangePushA, fp(push_a)},
                             {NVTX_CBID_CORE_RangePushW, fp(push_w)},
                             {NVTX_CBID_CORE_RangePop, fp(pop_)}});
  fill(NVTX_CB_MODULE_CORE2, {{NVTX_CBID_CORE2_DomainMarkEx, fp(domain_mark)},
                              {NVTX_CBID_CORE2_DomainRangeStartEx, fp(domain_start)},
                              {NVTX_CBID_CORE2_DomainRangeEnd, fp(domain_end)},
                              {NVTX_CBID_CORE2_DomainRangePushEx, fp(domain_push)},
                              {NVTX_CBID_CORE2_DomainRangePop, fp(domain_pop)},
                              {NVTX_CBID_CORE2_DomainRegisterStringA, fp(register_a)},
                              {NVTX_CBID_CORE2_DomainRegisterStringW, fp(register_w)},
                              {NVTX_CBID_CORE2_DomainCreateA, fp(domain_create_a)},
                              {NVTX_CBID_CORE2_DomainCreateW, fp(domain_create_w)},
                              {NVTX_CBID_CORE2_DomainDestroy, fp(domain_destroy)}});
  return 1;
}

namespace {

// Global name id → the writer's string id (caller holds the writer's lock).
uint32_t writer_id(TraceWriter& w, uint32_t gid) {
  if (gid == 0) return 0;
  // Another file (a test's next writer): its string ids start again. Reusing the last file's
  // ids named every range after the strings first interned in it ("prefill" for "decode").
  if (w.session() != g_writer_session) {
    g_writer_ids.clear();
    g_writer_session = w.session();
  }
  if (g_writer_ids.size() < gid) g_writer_ids.resize(gid, 0);
  uint32_t& id = g_writer_ids[gid - 1];
  if (id == 0) {
    std::lock_guard<std::mutex> lock(g_names_lock);
    id = w.intern(g_names[gid - 1]);
  }
  return id;
}

}  // namespace

void write_nvtx_events(TraceWriter& w) {
  std::vector<ThreadEvents*> threads;
  {
    std::lock_guard<std::mutex> lock(g_threads_lock);
    threads = g_threads;
  }
  std::vector<Event> events;
  for (ThreadEvents* t : threads) {
    {
      std::lock_guard<std::mutex> lock(t->lock);
      events.swap(t->events);
      t->events.reserve(kBatch);
    }
    for (const Event& e : events) {
      MarkerRecord r{};
      r.timestamp_ns = e.timestamp_ns;
      r.id = static_cast<uint32_t>(e.id);
      r.flags = e.flags;
      r.object_kind = e.object_kind;
      r.object_id = e.thread;
      r.name_id = writer_id(w, e.name);
      r.domain_id = writer_id(w, e.domain);
      w.add(RecordType::marker, r);
      w.count_activity();
    }
    events.clear();
  }
}

void discard_nvtx_events() {
  std::lock_guard<std::mutex> lock(g_threads_lock);
  for (ThreadEvents* t : g_threads) {
    std::lock_guard<std::mutex> l(t->lock);
    t->events.clear();
  }
}

}  // namespace jouleprof::inject
