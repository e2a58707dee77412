#include "jouleprof/core/series.hpp"

#include <algorithm>
#include <stdexcept>

namespace jouleprof {

Series::Series(std::size_t max_in_memory)
    : max_in_memory_(std::max<std::size_t>(max_in_memory, 2 * kChunk)) {}

Series::Series(Series&& o) noexcept
    : max_in_memory_(o.max_in_memory_),
      in_memory_(o.in_memory_),
      size_(o.size_),
      first_resident_(o.first_resident_),
      chunks_(std::move(o.chunks_)),
      spill_(o.spill_) {
  o.spill_ = nullptr;
  o.size_ = o.in_memory_ = o.first_resident_ = 0;
}

Series& Series::operator=(Series&& o) noexcept {
  if (this != &o) {
    if (spill_ != nullptr) std::fclose(spill_);
    max_in_memory_ = o.max_in_memory_;
    in_memory_ = o.in_memory_;
    size_ = o.size_;
    first_resident_ = o.first_resident_;
    chunks_ = std::move(o.chunks_);
    spill_ = o.spill_;
    o.spill_ = nullptr;
    o.size_ = o.in_memory_ = o.first_resident_ = 0;
  }
  return *this;
}

Series::~Series() {
  if (spill_ != nullptr) std::fclose(spill_);
}

bool Series::append(double t_s, double value) {
  if (size_ > 0 && t_s < chunks_.back().t_last) return false;
  if (chunks_.empty() || chunks_.back().count == kChunk) {
    chunks_.emplace_back();
    chunks_.back().data.reserve(kChunk);
    chunks_.back().t_first = t_s;
  }
  Chunk& c = chunks_.back();
  c.data.push_back({t_s, value});
  c.count++;
  c.t_last = t_s;
  ++size_;
  ++in_memory_;
  if (in_memory_ > max_in_memory_) spill_oldest();
  return true;
}

void Series::spill_oldest() {
  if (first_resident_ + 1 >= chunks_.size()) return;  // never spill the chunk being filled
  if (spill_ == nullptr) {
    spill_ = std::tmpfile();
    if (spill_ == nullptr) return;  // keep in memory rather than lose data
  }
  Chunk& c = chunks_[first_resident_];
  std::fseek(spill_, 0, SEEK_END);
  c.file_offset = std::ftell(spill_);
  if (std::fwrite(c.data.data(), sizeof(Sample), c.count, spill_) != c.count) {
    c.file_offset = -1;
    return;
  }
  std::fflush(spill_);
  in_memory_ -= c.count;
  std::vector<Sample>().swap(c.data);
  ++first_resident_;
}

std::size_t Series::spilled_samples() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < first_resident_; ++i) n += chunks_[i].count;
  return n;
}

const std::vector<Sample>& Series::load(std::size_t c, std::vector<Sample>& buf) const {
  const Chunk& ch = chunks_[c];
  if (ch.file_offset < 0) return ch.data;
  buf.resize(ch.count);
  std::fseek(spill_, ch.file_offset, SEEK_SET);
  if (std::fread(buf.data(), sizeof(Sample), ch.count, spill_) != ch.count) {
    throw std::runtime_error("series: cannot read spilled samples back");
  }
  return buf;
}

Sample Series::front() const {
  std::vector<Sample> buf;
  return load(0, buf).front();
}

Sample Series::back() const { return chunks_.back().data.back(); }

std::vector<Sample> Series::slice(double t0, double t1) const {
  std::vector<Sample> out;
  if (size_ == 0) return out;
  // Chunks are time ordered: find the first chunk that can hold the sample before t0.
  std::size_t first = 0;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    if (chunks_[c].t_last < t0) first = c;  // its last sample is a candidate "before" sample
  }
  std::vector<Sample> buf;
  Sample before{};
  bool have_before = false;
  bool past_end = false;
  for (std::size_t c = first; c < chunks_.size() && !past_end; ++c) {
    const std::vector<Sample>& data = load(c, buf);
    for (const Sample& s : data) {
      if (s.t_s < t0) {
        before = s;
        have_before = true;
      } else {
        out.push_back(s);  // inside, or the first sample after the window
        if (s.t_s > t1) {
          past_end = true;
          break;
        }
      }
    }
  }
  if (have_before) out.insert(out.begin(), before);
  return out;
}

std::vector<Sample> Series::all() const {
  std::vector<Sample> out;
  out.reserve(size_);
  for_each([&](const Sample& s) { out.push_back(s); });
  return out;
}

}  // namespace jouleprof
