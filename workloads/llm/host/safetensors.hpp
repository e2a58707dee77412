// Safetensors files (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw tensor bytes.
// Read by memory mapping; sharded checkpoints through model.safetensors.index.json or every
// *.safetensors file in the directory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof::llm {

struct TensorView {
  std::string dtype;             ///< "BF16", "F16", "F32" ...
  std::vector<int64_t> shape;
  const unsigned char* data = nullptr;
  std::size_t bytes = 0;
  std::string file;
  int64_t elements() const;
};

class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }

 private:
  SafetensorsFile() = default;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

/// Every tensor of a checkpoint directory (one or several files).
class Checkpoint {
 public:
  static Result<std::unique_ptr<Checkpoint>> open_dir(const std::string& dir);
  const TensorView* find(const std::string& name) const;
  /// Element i..i+n of tensor `name` converted to float; checks dtype and element count.
  Result<void> read_float(const std::string& name, const std::vector<int64_t>& shape, std::vector<float>& out) const;
  std::size_t tensor_count() const { return index_.size(); }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
};

/// Writes tensors (float data, stored as `dtype`: "BF16", "F16" or "F32") to one safetensors file.
struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;
  std::string dtype;  ///< empty: the file's default
};
Result<void> write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors, const std::string& dtype);

}  // namespace jouleprof::llm
