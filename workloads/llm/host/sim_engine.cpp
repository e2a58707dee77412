#include "sim_engine.hpp"

#include "jouleprof/measure/process.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace jouleprof::llm {
namespace {

class SimEngine final : public LlmEngine {
 public:
  SimEngine(const EngineOptions& o, LlmConfig c, SimSpeeds s, std::function<void(double)> set_power)
      : o_(o), c_(std::move(c)), s_(s), set_power_(std::move(set_power)) {}
  const LlmConfig& config() const override { return c_; }
  DType dtype() const override { return o_.dtype; }
  std::string device_name() const override { return "simulated H100 (time and power model)"; }
  bool simulated() const override { return true; }
  std::string describe() const override { return "simulated engine: roofline time model, no arithmetic"; }

  Result<void> prepare(const RunShape& s) override {
    if (s.batch < 1 || static_cast<int>(s.prompt_lens.size()) != s.batch) {
      return make_error(Errc::invalid_argument, "one prompt length per sequence needed");
    }
    if (s.max_context() > c_.max_position) return make_error(Errc::invalid_argument, "context exceeds the model's positions");
    shape_ = s;
    steps_ = 0;
    prepared_ = true;
    return {};
  }
  void prefill() override {
    double flops = 0;
    for (int len : shape_.prompt_lens) flops += WorkModel::prefill_flops(c_, len);
    const double bytes = WorkModel::decode_weight_bytes(c_, o_.dtype, shape_.batch);
    work(flops, bytes, 9.0 * c_.layers + 4);
    steps_ = 0;
  }
  void decode(int steps) override {
    double flops = 0, bytes = 0;
    for (int i = 0; i < steps; ++i) {
      bytes += WorkModel::decode_weight_bytes(c_, o_.dtype, shape_.batch);
      for (int len : shape_.prompt_lens) {
        bytes += WorkModel::decode_kv_bytes(c_, o_.dtype, len + steps_ + i);
        flops += WorkModel::decode_flops(c_, len + steps_ + i);
      }
    }
    steps_ += steps;
    work(flops, bytes, steps * (5.0 * c_.layers + 2));
  }
  void rewind() override { steps_ = 0; }
  int component(Component c, int layer, int reps) override {
    const int n = component_per_layer(c) && layer < 0 ? c_.layers : 1;
    double flops = 0, bytes = 0;
    cost(c, flops, bytes);
    work(flops * n * reps, bytes * n * reps, static_cast<double>(n) * reps);
    return reps;
  }
  int layer_block(int layer, int reps) override {
    (void)layer;
    double flops = 0, bytes = 0;
    for (Component c : kLayerComponents) {
      double f = 0, b = 0;
      cost(c, f, b);
      flops += f;
      bytes += b;
    }
    work(flops * reps, bytes * reps, 5.0 * reps);
    return reps;
  }
  int step(int reps) override {
    double flops = 0, bytes = 0;
    for (int i = 0; i < kComponentCount - 1; ++i) {
      const auto c = static_cast<Component>(i);
      double f = 0, b = 0;
      cost(c, f, b);
      const int n = component_per_layer(c) ? c_.layers : 1;
      flops += f * n;
      bytes += b * n;
    }
    work(flops * reps, bytes * reps, (5.0 * c_.layers + 1) * reps);
    return reps;
  }
  void synchronize() override {}
  Result<std::vector<std::vector<int>>> generated() override {
    return make_error(Errc::unsupported, "the simulated engine computes no tokens");
  }
  Result<std::vector<float>> last_logits() override {
    return make_error(Errc::unsupported, "the simulated engine computes no logits");
  }

 private:
  // One call of component c for the whole batch at the current position.
  void cost(Component c, double& flops, double& bytes) const {
    const double b = dtype_bytes(o_.dtype), B = shape_.batch, h = c_.hidden;
    double mat = 0;
    switch (c) {
      case Component::attn_qkv: mat = h * c_.qkv_dim(); break;
      case Component::attn_out: mat = h * c_.q_dim(); break;
      case Component::mlp_gate_up: mat = 2 * h * c_.intermediate; break;
      case Component::mlp_down: mat = h * c_.intermediate; break;
      case Component::lm_head: mat = h * c_.vocab; break;
      case Component::attn_core:
        for (int len : shape_.prompt_lens) {
          bytes += WorkModel::decode_kv_bytes(c_, o_.dtype, len + steps_) / c_.layers;
          flops += 4.0 * c_.heads * c_.head_dim * (len + steps_ + 1);
        }
        return;
      default:
        bytes = B * h * (b + 4);
        return;
    }
    bytes = mat * b + B * h * 4;
    flops = 2 * mat * B;
  }
  void work(double flops, double bytes, double kernels) {
    const double t_flop = flops / s_.flops, t_byte = bytes / s_.bandwidth;
    const double t = std::max(t_flop, t_byte) + kernels * s_.launch_s;
    if (t <= 0) return;
    const double watts = std::min(s_.tdp_w, s_.idle_w + 60 + 300 * (t_byte / t) + 560 * (t_flop / t));
    set_power_(watts);
    // In steps, so that SIGINT/SIGTERM end a long simulated kernel within ~20 ms.
    const auto start = std::chrono::steady_clock::now();
    const std::chrono::duration<double> length(std::min(t, 1e6));
    while (interrupting_signal() == 0) {
      const std::chrono::duration<double> left = length - (std::chrono::steady_clock::now() - start);
      if (left.count() <= 0) break;
      std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(left, std::chrono::milliseconds(20)));
    }
    set_power_(s_.idle_w);
  }

  EngineOptions o_;
  LlmConfig c_;
  SimSpeeds s_;
  std::function<void(double)> set_power_;
  RunShape shape_;
  int steps_ = 0;
  bool prepared_ = false;
};

}  // namespace

std::unique_ptr<LlmEngine> create_sim_engine(const EngineOptions& o, const LlmConfig& c, SimSpeeds s,
                                             std::function<void(double)> set_power) {
  return std::make_unique<SimEngine>(o, c, s, std::move(set_power));
}

}  // namespace jouleprof::llm
