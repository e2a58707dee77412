// A time series of (t, value) samples with bounded memory: full chunks beyond a budget are
// spilled to an anonymous temporary file, so runs of hours keep a flat memory footprint.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <vector>

namespace jouleprof {

struct Sample {
  double t_s;    ///< run time base
  double value;  ///< in the unit of the series' metric
};

class Series {
 public:
  static constexpr std::size_t kChunk = 16384;

  /// @param max_in_memory samples kept in RAM before the oldest chunks go to disk.
  explicit Series(std::size_t max_in_memory = std::size_t{1} << 21);
  Series(Series&&) noexcept;
  Series& operator=(Series&&) noexcept;
  ~Series();

  /// Appends a sample; a sample older than the last one is dropped (returns false).
  bool append(double t_s, double value);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t spilled_samples() const;
  Sample front() const;
  Sample back() const;

  /// Samples with t in [t0, t1], plus the nearest one on each side (for interpolation).
  std::vector<Sample> slice(double t0, double t1) const;
  /// All samples (reads spilled chunks back).
  std::vector<Sample> all() const;
  /// Visits every sample in time order without materialising them all.
  template <class F>
  void for_each(F&& f) const {
    std::vector<Sample> buf;
    for (std::size_t c = 0; c < chunks_.size(); ++c) {
      const std::vector<Sample>& data = load(c, buf);
      for (const Sample& s : data) f(s);
    }
  }

 private:
  struct Chunk {
    std::vector<Sample> data;  // empty when spilled
    long file_offset = -1;     // where it lives once spilled
    std::size_t count = 0;
    double t_first = 0, t_last = 0;
  };
  const std::vector<Sample>& load(std::size_t c, std::vector<Sample>& buf) const;
  void spill_oldest();

  std::size_t max_in_memory_;
  std::size_t in_memory_ = 0;
  std::size_t size_ = 0;
  std::size_t first_resident_ = 0;  // chunks before this index are on disk
  std::vector<Chunk> chunks_;
  std::FILE* spill_ = nullptr;
};

}  // namespace jouleprof
