// Pausing `jouleprof trace` from inside a C++ program (docs/trace.md, "Pausing from inside the
// program"). Header-only, no link dependency on jouleprof: the injection library that CUDA loaded
// (CUDA_INJECTION64_PATH) exports a C API,
//
//   int jouleprof_trace_pause(void):      1: this process's trace is paused now; 0: not traced
//   int jouleprof_trace_resume(void):     1: recording again; 0: not traced
//   int jouleprof_trace_recording(void):  1: recording, 0: paused, -1: not traced
//
// found here with dlopen(path, RTLD_NOLOAD) and dlsym (CUDA loads it RTLD_LOCAL: a plain extern
// declaration would not link to it). Outside `jouleprof trace` every call is a no-op: false/-1.
// Paused: no kernel, copy, memset or launch records, no NVTX ranges (what stays is said in
// src/trace/inject/duty_cycle.cpp, RecordingControl::pause).
//
//   jouleprof::trace_pause::pause();      // after warm-up and compilation …
//   { jouleprof::trace_pause::Paused p; evaluate(); }  // … or for a block
#pragma once

#include <dlfcn.h>

#include <cstdlib>

namespace jouleprof::trace_pause {

namespace detail {
/// Calls the injection library's function `name`; `otherwise` when this process is not traced.
inline int call(const char* name, int otherwise) {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || path[0] == '\0' || std::getenv("JOULEPROF_TRACE_DIR") == nullptr)
    return otherwise;
  void* lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);  // only if already loaded (by CUDA)
  if (lib == nullptr) return otherwise;
  auto* f = reinterpret_cast<int (*)()>(dlsym(lib, name));
  const int r = f != nullptr ? f() : otherwise;
  dlclose(lib);  // our reference only: CUDA keeps its own
  return r;
}
}  // namespace detail

/// Stops recording until resume(); true when this process's trace is paused now.
inline bool pause() {
  return detail::call("jouleprof_trace_pause", 0) == 1;
}
/// Records again what was on before the pause; true when this process's trace records now.
inline bool resume() {
  return detail::call("jouleprof_trace_resume", 0) == 1;
}
/// 1: recording, 0: paused, -1: not under `jouleprof trace`.
inline int recording() {
  return detail::call("jouleprof_trace_recording", -1);
}

/// Paused for its lifetime (unless already paused: then left paused).
class Paused {
 public:
  Paused() : mine_(recording() == 1 && pause()) {}
  ~Paused() {
    if (mine_) resume();
  }
  Paused(const Paused&) = delete;
  Paused& operator=(const Paused&) = delete;

 private:
  bool mine_;
};

}  // namespace jouleprof::trace_pause
