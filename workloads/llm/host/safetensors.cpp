#include "safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "numeric.hpp"

namespace jouleprof::llm {

int64_t TensorView::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
int dtype_size(const std::string& d) {
  if (d == "BF16" || d == "F16" || d == "I16") return 2;
  if (d == "F32" || d == "I32") return 4;
  if (d == "F64" || d == "I64") return 8;
  if (d == "U8" || d == "I8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}
std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}
}  // namespace

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) munmap(map_, size_);
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(Errc::not_found, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    return make_error(Errc::io, "cannot stat " + path);
  }
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->size_ = static_cast<std::size_t>(st.st_size);
  if (f->size_ < 8) {
    ::close(fd);
    return make_error(Errc::parse, path + ": too short for a safetensors file");
  }
  void* m = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return make_error(Errc::io, "cannot map " + path);
  f->map_ = m;
  const auto* base = static_cast<const unsigned char*>(m);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | base[i];
  if (hlen > f->size_ - 8 || hlen > (100u << 20)) return make_error(Errc::parse, path + ": bad header length");
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(base + 8), hlen));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, path + ": header: " + e.what());
  }
  const std::size_t data0 = 8 + hlen;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& t = it.value();
    TensorView v;
    try {
      v.dtype = t.at("dtype").get<std::string>();
      v.shape = t.at("shape").get<std::vector<int64_t>>();
      const auto off = t.at("data_offsets").get<std::vector<uint64_t>>();
      if (off.size() != 2 || off[1] < off[0] || data0 + off[1] > f->size_) {
        return make_error(Errc::parse, path + ": tensor " + it.key() + ": data offsets outside the file");
      }
      v.data = base + data0 + off[0];
      v.bytes = off[1] - off[0];
    } catch (const std::exception& e) {
      return make_error(Errc::parse, path + ": tensor " + it.key() + ": " + e.what());
    }
    const int es = dtype_size(v.dtype);
    if (es != 0 && static_cast<std::size_t>(v.elements()) * es != v.bytes) {
      return make_error(Errc::parse, path + ": tensor " + it.key() + ": " + std::to_string(v.bytes) +
                                         " bytes do not match shape " + shape_str(v.shape));
    }
    v.file = path;
    f->tensors_.emplace(it.key(), std::move(v));
  }
  return f;
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(Errc::not_found, "weights directory " + dir + " does not exist");
  std::vector<std::string> files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    std::ifstream in(index);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      const auto j = nlohmann::json::parse(ss.str());
      for (const auto& [name, file] : j.at("weight_map").items()) {
        (void)name;
        const std::string p = (fs::path(dir) / file.get<std::string>()).string();
        if (std::find(files.begin(), files.end(), p) == files.end()) files.push_back(p);
      }
    } catch (const std::exception& e) {
      return make_error(Errc::parse, index.string() + ": " + e.what());
    }
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) return make_error(Errc::not_found, "no *.safetensors files in " + dir);
  auto ck = std::make_unique<Checkpoint>();
  for (const auto& p : files) {
    auto f = SafetensorsFile::open(p);
    if (!f) return f.error();
    for (const auto& [name, view] : (*f)->tensors()) {
      if (!ck->index_.emplace(name, &view).second) {
        return make_error(Errc::parse, "tensor " + name + " appears in more than one file of " + dir);
      }
    }
    ck->files_.push_back(std::move(*f));
  }
  return ck;
}

const TensorView* Checkpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

Result<void> Checkpoint::read_float(const std::string& name, const std::vector<int64_t>& shape,
                                    std::vector<float>& out) const {
  const TensorView* v = find(name);
  if (v == nullptr) return make_error(Errc::parse, "checkpoint has no tensor " + name);
  if (v->shape != shape) {
    return make_error(Errc::parse, "tensor " + name + " has shape " + shape_str(v->shape) + ", expected " + shape_str(shape));
  }
  const std::size_t n = static_cast<std::size_t>(v->elements());
  out.resize(n);
  if (v->dtype == "F32") {
    std::memcpy(out.data(), v->data, n * 4);
  } else if (v->dtype == "BF16" || v->dtype == "F16") {
    const bool bf = v->dtype == "BF16";
    for (std::size_t i = 0; i < n; ++i) {
      uint16_t b;
      std::memcpy(&b, v->data + 2 * i, 2);
      out[i] = bf ? bf16_bits_to_float(b) : f16_bits_to_float(b);
    }
  } else {
    return make_error(Errc::parse, "tensor " + name + " has unsupported dtype " + v->dtype + " (BF16, F16, F32)");
  }
  return {};
}

Result<void> write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors, const std::string& dtype) {
  auto size_of = [](const std::string& d) { return d == "F32" ? 4 : (d == "BF16" || d == "F16") ? 2 : 0; };
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& t : tensors) {
    const std::string dt = t.dtype.empty() ? dtype : t.dtype;
    const int es = size_of(dt);
    if (es == 0) return make_error(Errc::invalid_argument, "cannot write dtype " + dt);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    h[t.name] = {{"dtype", dt}, {"shape", t.shape}, {"data_offsets", {off, off + static_cast<uint64_t>(n) * es}}};
    off += static_cast<uint64_t>(n) * es;
  }
  h["__metadata__"] = {{"format", "pt"}};
  std::string hs = h.dump();
  while ((hs.size() + 8) % 8 != 0) hs += ' ';
  std::ofstream out(path, std::ios::binary);
  if (!out) return make_error(Errc::io, "cannot write " + path);
  unsigned char len[8];
  uint64_t hl = hs.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((hl >> (8 * i)) & 0xFF);
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(hs.data(), static_cast<std::streamsize>(hs.size()));
  std::vector<unsigned char> buf;
  for (const auto& t : tensors) {
    const std::string dt = t.dtype.empty() ? dtype : t.dtype;
    const int es = size_of(dt);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    buf.resize(static_cast<std::size_t>(n) * es);
    for (int64_t i = 0; i < n; ++i) {
      if (es == 4) {
        std::memcpy(&buf[static_cast<std::size_t>(i) * 4], &t.data[i], 4);
      } else {
        const uint16_t b = dt == "BF16" ? float_to_bf16_bits(t.data[i]) : float_to_f16_bits(t.data[i]);
        std::memcpy(&buf[static_cast<std::size_t>(i) * 2], &b, 2);
      }
    }
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  }
  if (!out) return make_error(Errc::io, "write failed: " + path);
  return {};
}

}  // namespace jouleprof::llm
