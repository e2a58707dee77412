// The op-shape readers the replay tiers share (kernel_table.cpp, tier_shapes.cpp): the profiler's
// record_shapes fields (`Input Dims`, `Input type`, `Input Strides`, `Concrete Inputs`) as
// numbers, PyTorch's type names as dtypes, and the convolution, batch-norm and attention tiers' shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/replay/kernel_table.hpp"

namespace jouleprof::replay_detail {

using Dims = std::vector<std::vector<int64_t>>;

/// "[[32, 3], [], [7]]" → {{32, 3}, {}, {7}}; not an array: empty.
Dims parse_dims(const std::string& text);
/// `Input type` → its strings ("" for a non-string entry).
std::vector<std::string> parse_types(const std::string& text);
/// PyTorch's C++ type name → bf16 fp16 fp32 fp64 fp8e4m3 fp8e5m2 int8 u8 int16 int32 int64, else "".
std::string dtype_of(const std::string& t);
/// Bytes per element of a PyTorch type name; 0 when unknown.
int elem_size(const std::string& t);
uint64_t numel(const std::vector<int64_t>& d);

/// The convolution of a `conv` tier row from its op's inputs, or nullopt and `why`.
std::optional<ConvShape> conv_shape(const KernelRow& r, std::string& why);
/// The fused attention of an `attention` tier row from its op's inputs: query/key shapes (BHSD, or
/// BSHD for the *_attention_forward ops), dtype, is_causal and scale from the concrete inputs where
/// the op has them (else causal guessed from seq_q == seq_kv > 1, scale 1/sqrt(d)); or nullopt and `why`.
std::optional<AttentionShape> attention_shape(const KernelRow& r, std::string& why);
/// The note of a row with an attention shape: what the engine runs for it and where each figure came from.
std::string attention_note(const KernelRow& r);
/// The inference batch normalization of a `batchnorm` tier row from its op's inputs (a training
/// one is not replayed through cuDNN), or nullopt and `why`.
std::optional<BatchNormShape> batchnorm_shape(const KernelRow& r, std::string& why);

}  // namespace jouleprof::replay_detail
