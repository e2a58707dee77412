// One inference batch normalization planned and run through cuDNN (cudnn_batchnorm.hpp).
#include "cudnn_batchnorm.hpp"

#include <fmt/format.h>

namespace jouleprof::replay::cudnn {

using namespace detail;

namespace {

// PyTorch's epsilon default; cuDNN's time does not depend on it.
constexpr double kEpsilon = 1e-5;

}  // namespace

void BatchNorm::release() {
  if (s_ == nullptr || s_->api() == nullptr) return;
  const Api& a = *s_->api();
  if (x_ != nullptr) a.DestroyTensorDescriptor(x_);
  if (p_ != nullptr) a.DestroyTensorDescriptor(p_);
  x_ = p_ = nullptr;
}

std::string BatchNorm::plan(Session& s, const Item& it) {
  release();
  s_ = &s;
  if (s.api() == nullptr || s.handle() == nullptr) return "cuDNN is not open";
  const Api& a = *s.api();
  if (a.BatchNormalizationForwardInference == nullptr) return "cuDNN " + a.library + " lacks cudnnBatchNormalizationForwardInference";
  const int dt = data_type(it.dtype);
  if (dt < 0) return "dtype " + it.dtype + " is not replayed through cuDNN (bf16, fp16, fp32, fp64 are)";
  std::vector<int> x = ints(it.bn_input);
  if (x.size() < 2 || x.size() > 5 || count(x) == 0) return "the batchnorm item's input is not a 2- to 5-D tensor";
  mode = x.size() == 2 ? kBatchNormPerActivation : kBatchNormSpatial;
  while (x.size() < 4) x.push_back(1);  // PyTorch's descriptors are at least 4-D
  const bool cl = it.channels_last && it.bn_input.size() >= 4;
  std::vector<int> p(x.size(), 1);
  p[1] = x[1];
  f64_ = dt == kDouble;
  const int pdt = f64_ ? kDouble : kFloat;  // PyTorch keeps the parameters in fp32 for fp16/bf16 inputs
  const int nd = static_cast<int>(x.size());
  const Status st[] = {a.CreateTensorDescriptor(&x_), a.SetTensorNdDescriptor(x_, dt, nd, x.data(), packed_strides(x, cl).data()),
                       a.CreateTensorDescriptor(&p_), a.SetTensorNdDescriptor(p_, pdt, nd, p.data(), packed_strides(p, false).data())};
  const char* calls[] = {"cudnnCreateTensorDescriptor", "cudnnSetTensorNdDescriptor", "cudnnCreateTensorDescriptor", "cudnnSetTensorNdDescriptor"};
  for (std::size_t i = 0; i < std::size(st); ++i) {
    if (st[i] != kSuccess) return a.describe(calls[i], st[i]);
  }
  data_bytes = count(x) * elem_bytes(it.dtype);
  param_bytes = static_cast<size_t>(x[1]) * (f64_ ? 8 : 4);
  return "";
}

std::string BatchNorm::run(const void* x, void* y, const void* params, size_t param_stride) const {
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = f64_ ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* beta = f64_ ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  const auto* p = static_cast<const char*>(params);
  const Status st = s_->api()->BatchNormalizationForwardInference(s_->handle(), mode, alpha, beta, x_, x, x_, y, p_, p, p + param_stride,
                                                                  p + 2 * param_stride, p + 3 * param_stride, kEpsilon);
  return st == kSuccess ? "" : s_->api()->describe("cudnnBatchNormalizationForwardInference", st);
}

}  // namespace jouleprof::replay::cudnn
