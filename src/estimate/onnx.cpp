#include "jouleprof/estimate/onnx.hpp"

namespace jouleprof::estimate {
const std::vector<std::string>& onnx_supported_ops() {
  static const std::vector<std::string> v;
  return v;
}
Result<Graph> import_onnx(std::string_view, const std::string& name, const OnnxOptions&) {
  return make_error(Errc::unsupported, name + ": ONNX import not built yet");
}
Result<Graph> import_onnx_file(const std::string& path, const OnnxOptions& o) { return import_onnx({}, path, o); }
}  // namespace jouleprof::estimate
