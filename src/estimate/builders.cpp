#include "jouleprof/estimate/builders.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>

namespace jouleprof::estimate {
namespace {

using B = GraphBuilder;

std::string sfx(const std::string& p, const std::string& s) { return p.empty() ? s : p + "." + s; }

// conv (no bias) + batch norm + optional activation, as torchvision runs it in eval mode.
// Module calls (nn.Module.__call__) are recorded with b.modules(n) before the op they launch
// first, following the torchvision/transformers module structure (docs/estimate.md).
int conv_bn(B& b, const std::string& n, int x, int64_t out, int64_t k, int64_t stride, int64_t groups,
            std::string_view act) {
  b.modules(2);  // Conv2dNormActivation (Sequential), Conv2d
  int y = b.conv2d(sfx(n, "conv"), x, out, k, k, stride, (k - 1) / 2, groups, false);
  b.modules(1);  // BatchNorm2d
  y = b.batchnorm(sfx(n, "bn"), y);
  if (!act.empty()) b.modules(1);  // activation module
  if (act == "relu") y = b.unary(sfx(n, "relu"), "Relu", y);
  if (act == "relu6") y = b.unary(sfx(n, "relu6"), "Clip", y, 2);
  if (act == "silu") y = b.unary(sfx(n, "silu"), "Silu", y, 4, 1);
  return y;
}

int classifier(B& b, int x, int64_t classes) {
  b.modules(1);  // avgpool
  int y = b.global_avg_pool("avgpool", x);
  y = b.reshape("flatten", y, {b.tensor(y).shape[0], -1});
  b.modules(1);  // fc (Linear)
  return b.linear("fc", y, classes, true);
}

Result<Graph> resnet(const ModelOptions& o, bool bottleneck, const std::vector<int>& blocks, const std::string& name) {
  B b(name, o.dtype);
  int x = b.input("image", {o.batch, 3, o.image, o.image});
  b.modules(2);  // ResNet, conv1
  x = b.conv2d("conv1", x, 64, 7, 7, 2, 3);
  b.modules(1);
  x = b.batchnorm("bn1", x);
  b.modules(1);
  x = b.unary("relu", "Relu", x);
  b.modules(1);
  x = b.pool2d("maxpool", "MaxPool", x, 3, 2, 1);
  int64_t in = 64;
  for (int l = 0; l < 4; ++l) {
    const int64_t width = 64LL << l;
    for (int i = 0; i < blocks[static_cast<std::size_t>(l)]; ++i) {
      const std::string n = "layer" + std::to_string(l + 1) + "." + std::to_string(i);
      const int64_t stride = (i == 0 && l > 0) ? 2 : 1;
      const int64_t out = bottleneck ? width * 4 : width;
      int y;
      // conv, bn and relu are module calls each; the block itself and (first block) the
      // layer's Sequential are charged to the first conv.
      auto cbr = [&](const std::string& c, int in_t, int64_t ch, int64_t k, int64_t st, int64_t pad, const char* relu) {
        b.modules(1);
        int t = b.conv2d(n + "." + c, in_t, ch, k, k, st, pad);
        b.modules(1);
        t = b.batchnorm(n + ".bn" + c.substr(4), t);
        if (relu) {
          b.modules(1);
          t = b.unary(n + "." + relu, "Relu", t);
        }
        return t;
      };
      b.modules(1 + (i == 0 ? 1 : 0));
      if (bottleneck) {
        y = cbr("conv1", x, width, 1, 1, 0, "relu1");
        y = cbr("conv2", y, width, 3, stride, 1, "relu2");
        y = cbr("conv3", y, out, 1, 1, 0, nullptr);
      } else {
        y = cbr("conv1", x, width, 3, stride, 1, "relu1");
        y = cbr("conv2", y, width, 3, 1, 1, nullptr);
      }
      int skip = x;
      if (stride != 1 || in != out) {
        b.modules(2);  // downsample Sequential, its conv
        skip = b.conv2d(n + ".downsample.0", x, out, 1, 1, stride, 0);
        b.modules(1);
        skip = b.batchnorm(n + ".downsample.1", skip);
      }
      const int sum = b.binary(n + ".add", "Add", y, skip);
      b.modules(1);
      x = b.unary(n + ".relu_out", "Relu", sum);
      in = out;
    }
  }
  b.output(classifier(b, x, 1000));
  return b.finish();
}

Result<Graph> mobilenet_v2(const ModelOptions& o) {
  B b("mobilenet_v2", o.dtype);
  int x = b.input("image", {o.batch, 3, o.image, o.image});
  b.modules(2);  // MobileNetV2, features (Sequential)
  x = conv_bn(b, "features.0", x, 32, 3, 2, 1, "relu6");
  const int settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t in = 32;
  int idx = 1;
  for (const auto& s : settings) {
    for (int i = 0; i < s[2]; ++i, ++idx) {
      const std::string n = "features." + std::to_string(idx);
      const int64_t stride = i == 0 ? s[3] : 1, hidden = in * s[0], out = s[1];
      int y = x;
      b.modules(2);  // InvertedResidual, its conv Sequential
      if (s[0] != 1) y = conv_bn(b, n + ".expand", y, hidden, 1, 1, 1, "relu6");
      y = conv_bn(b, n + ".dw", y, hidden, 3, stride, hidden, "relu6");
      y = conv_bn(b, n + ".project", y, out, 1, 1, 1, "");
      x = (stride == 1 && in == out) ? b.binary(n + ".add", "Add", x, y) : y;
      in = out;
    }
  }
  x = conv_bn(b, "features.18", x, 1280, 1, 1, 1, "relu6");
  b.output(classifier(b, x, 1000));
  return b.finish();
}

Result<Graph> efficientnet_b0(const ModelOptions& o) {
  B b("efficientnet_b0", o.dtype);
  int x = b.input("image", {o.batch, 3, o.image, o.image});
  b.modules(2);  // EfficientNet, features (Sequential)
  x = conv_bn(b, "features.0", x, 32, 3, 2, 1, "silu");
  // expand ratio, kernel, stride, out channels, repeats (torchvision efficientnet_b0)
  const int settings[7][5] = {{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2}, {6, 5, 2, 40, 2}, {6, 3, 2, 80, 3},
                              {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}};
  int64_t in = 32;
  int stage = 1;
  for (const auto& s : settings) {
    for (int i = 0; i < s[4]; ++i) {
      const std::string n = "features." + std::to_string(stage) + "." + std::to_string(i);
      const int64_t stride = i == 0 ? s[2] : 1, hidden = in * s[0], out = s[3];
      int y = x;
      b.modules(2 + (i == 0 ? 1 : 0));  // MBConv, its block Sequential (+ the stage's Sequential)
      if (s[0] != 1) y = conv_bn(b, n + ".expand", y, hidden, 1, 1, 1, "silu");
      y = conv_bn(b, n + ".dw", y, hidden, s[1], stride, hidden, "silu");
      // squeeze-and-excitation
      const int64_t sq = std::max<int64_t>(1, in / 4);
      b.modules(2);  // SqueezeExcitation, avgpool
      int se = b.global_avg_pool(n + ".se.pool", y);
      b.modules(1);
      se = b.conv2d(n + ".se.fc1", se, sq, 1, 1, 1, 0, 1, true);
      b.modules(1);
      se = b.unary(n + ".se.silu", "Silu", se, 4, 1);
      b.modules(1);
      se = b.conv2d(n + ".se.fc2", se, hidden, 1, 1, 1, 0, 1, true);
      b.modules(1);
      se = b.unary(n + ".se.sigmoid", "Sigmoid", se, 4, 1);
      y = b.binary(n + ".se.scale", "Mul", y, se);
      y = conv_bn(b, n + ".project", y, out, 1, 1, 1, "");
      if (stride == 1 && in == out) b.modules(1);  // StochasticDepth
      x = (stride == 1 && in == out) ? b.binary(n + ".add", "Add", x, y) : y;
      in = out;
    }
    ++stage;
  }
  x = conv_bn(b, "features.8", x, 1280, 1, 1, 1, "silu");
  b.output(classifier(b, x, 1000));
  return b.finish();
}

// A pre-norm (ViT) or post-norm (BERT) transformer encoder layer with GELU MLP.
// Module calls as torchvision's EncoderBlock (block, ln_1, self_attention, dropout, ln_2,
// MLPBlock: Sequential of Linear, GELU, Dropout, Linear, Dropout).
int encoder_layer(B& b, const std::string& n, int x, int64_t heads, int64_t mlp, bool pre_norm) {
  const Shape s = b.tensor(x).shape;  // [B, S, E]
  const int64_t E = s[2], D = E / heads;
  b.modules(pre_norm ? 2 : 1);  // the block (+ ln_1)
  int h = pre_norm ? b.layernorm(n + ".ln_1", x) : x;
  b.modules(1);  // MultiheadAttention
  int qkv = b.linear(n + ".attn.in_proj", h, 3 * E, true);
  qkv = b.reshape(n + ".attn.split", qkv, {s[0], s[1], 3, heads, D});
  auto part = [&](int i, const char* nm) {
    int t = b.slice(n + ".attn." + nm, qkv, 2, i, i + 1, 1, true);
    t = b.reshape(n + ".attn." + nm + ".view", t, {s[0], s[1], heads, D});
    return b.transpose(n + ".attn." + nm + ".heads", t, {0, 2, 1, 3}, true);
  };
  const int q = part(0, "q"), k = part(1, "k"), v = part(2, "v");
  int a = b.attention(n + ".attn.sdpa", q, k, v, false);
  a = b.transpose(n + ".attn.merge", a, {0, 2, 1, 3});  // contiguous copy back to [B, S, H, D]
  a = b.reshape(n + ".attn.merge.view", a, {s[0], s[1], E});
  a = b.linear(n + ".attn.out_proj", a, E, true);
  b.modules(1);  // dropout
  x = b.binary(n + ".add_1", "Add", x, a);
  if (!pre_norm) b.modules(1);
  if (!pre_norm) x = b.layernorm(n + ".ln_1", x);
  if (pre_norm) b.modules(1);
  h = pre_norm ? b.layernorm(n + ".ln_2", x) : x;
  b.modules(2);  // MLPBlock, Linear
  h = b.linear(n + ".mlp.fc1", h, mlp, true);
  b.modules(1);
  h = b.unary(n + ".mlp.gelu", "Gelu", h, 8, 1);
  b.modules(2);  // Dropout, Linear
  h = b.linear(n + ".mlp.fc2", h, E, true);
  b.modules(1);  // Dropout
  x = b.binary(n + ".add_2", "Add", x, h);
  if (!pre_norm) b.modules(1);
  if (!pre_norm) x = b.layernorm(n + ".ln_2", x);
  return x;
}

Result<Graph> vit_b16(const ModelOptions& o) {
  B b("vit_b_16", o.dtype);
  const int64_t E = 768, P = 16, np = (o.image / P) * (o.image / P);
  int x = b.input("image", {o.batch, 3, o.image, o.image});
  b.modules(2);  // VisionTransformer, conv_proj
  x = b.conv2d("conv_proj", x, E, P, P, P, 0, 1, true);
  x = b.reshape("patches", x, {o.batch, E, np});
  x = b.transpose("patches.t", x, {0, 2, 1}, true);  // permute: a view that the concat reads
  const int cls = b.weight("class_token", {o.batch, 1, E});  // expanded view of a [1,1,E] parameter
  x = b.concat("cat_class_token", {cls, x}, 1);
  b.modules(1);  // Encoder
  x = b.binary("pos_embedding", "Add", x, b.weight("encoder.pos_embedding", {1, np + 1, E}));
  b.modules(2);  // encoder.dropout, encoder.layers (Sequential)
  for (int i = 0; i < 12; ++i) x = encoder_layer(b, "encoder.layers." + std::to_string(i), x, 12, 3072, true);
  b.modules(1);
  x = b.layernorm("encoder.ln", x);
  x = b.slice("class_token_out", x, 1, 0, 1, 1, true);
  x = b.reshape("class_token_out.view", x, {o.batch, E});
  b.modules(2);  // heads (Sequential), head
  b.output(b.linear("heads.head", x, 1000, true));
  return b.finish();
}

Result<Graph> bert_base(const ModelOptions& o) {
  B b("bert_base", o.dtype);
  const int64_t E = 768;
  const int ids = b.input("input_ids", {o.batch, o.seq}, DType::i64);
  b.modules(3);  // BertModel, embeddings, word_embeddings
  int x = b.embedding("embeddings.word", b.weight("embeddings.word.table", {30522, E}), ids);
  x = b.binary("embeddings.position", "Add", x, b.weight("embeddings.position.table", {1, o.seq, E}));
  x = b.binary("embeddings.token_type", "Add", x, b.weight("embeddings.token_type.row", {1, 1, E}));
  x = b.layernorm("embeddings.ln", x);
  for (int i = 0; i < 12; ++i) x = encoder_layer(b, "encoder.layer." + std::to_string(i), x, 12, 3072, false);
  int cls = b.slice("pooler.cls", x, 1, 0, 1, 1, true);
  cls = b.reshape("pooler.cls.view", cls, {o.batch, E});
  b.output(b.unary("pooler.tanh", "Tanh", b.linear("pooler.dense", cls, E, true), 4, 1));
  return b.finish();
}

// A 2-layer LSTM (hidden 1024), unrolled: the input projection of all time steps is one GEMM,
// the recurrent GEMM and the cell's pointwise ops run once per step (as cuDNN does).
Result<Graph> lstm(const ModelOptions& o) {
  B b("lstm", o.dtype);
  const int64_t H = 1024, layers = 2, T = o.seq, Bt = o.batch;
  int seq = b.input("x", {T, Bt, H});
  b.modules(1);  // nn.LSTM (cuDNN runs the sequence from one call)
  for (int64_t l = 0; l < layers; ++l) {
    const std::string n = "lstm.l" + std::to_string(l);
    const int wih = b.weight(n + ".w_ih", {H, 4 * H});
    const int whh = b.weight(n + ".w_hh", {H, 4 * H});
    const int bias = b.weight(n + ".bias", {4 * H});
    const int xg = b.binary(n + ".x_bias", "Add", b.matmul(n + ".x_proj", seq, wih), bias);  // [T, B, 4H]
    int h = b.input(n + ".h0", {Bt, H});
    int c = b.input(n + ".c0", {Bt, H});
    std::vector<int> hs;
    for (int64_t t = 0; t < T; ++t) {
      const std::string s = n + ".t" + std::to_string(t);
      int xt = b.slice(s + ".x", xg, 0, t, t + 1, 1, true);
      xt = b.reshape(s + ".x.view", xt, {Bt, 4 * H});
      int g = b.binary(s + ".gates", "Add", b.matmul(s + ".h_proj", h, whh), xt);
      g = b.unary(s + ".act", "LstmGates", g, 4, 1);  // sigmoid x3, tanh x1
      g = b.reshape(s + ".act.view", g, {Bt, 4, H});
      auto gate = [&](int i) {
        return b.reshape(s + ".g" + std::to_string(i) + ".view", b.slice(s + ".g" + std::to_string(i), g, 1, i, i + 1, 1, true),
                         {Bt, H});
      };
      const int ig = gate(0), fg = gate(1), cg = gate(2), og = gate(3);
      c = b.binary(s + ".c", "Add", b.binary(s + ".fc", "Mul", fg, c), b.binary(s + ".ig", "Mul", ig, cg));
      h = b.binary(s + ".h", "Mul", og, b.unary(s + ".tanh_c", "Tanh", c, 4, 1));
      hs.push_back(b.reshape(s + ".h.view", h, {1, Bt, H}));
    }
    seq = b.concat(n + ".stack", hs, 0);
  }
  b.output(seq);
  return b.finish();
}

// HF transformers' LlamaRMSNorm, op by op (eager): cast, pow, mean, +eps, rsqrt, mul, cast, *w.
int rmsnorm(B& b, const std::string& n, int x, int64_t hidden) {
  const DType dt = b.tensor(x).dtype;
  int f = b.cast(n + ".to_fp32", x, DType::f32);
  int v = b.unary(n + ".pow", "Pow", f, 1);
  v = b.reduce(n + ".mean", "ReduceMean", v, {-1}, true);
  v = b.binary(n + ".add_eps", "Add", v, b.weight(n + ".eps", {1}, DType::f32));
  v = b.unary(n + ".rsqrt", "Rsqrt", v, 1, 1);
  f = b.binary(n + ".scale", "Mul", f, v);
  f = b.cast(n + ".to_input_dtype", f, dt);
  return b.binary(n + ".weight_mul", "Mul", b.weight(n + ".weight", {hidden}), f);
}

// apply_rotary_pos_emb for one of q/k: x*cos + rotate_half(x)*sin (rotate_half: 2 views, neg, cat).
int rotary(B& b, const std::string& n, int x, int cos, int sin) {
  const int64_t D = b.tensor(x).shape.back();
  const int x1 = b.slice(n + ".x1", x, -1, 0, D / 2, 1, true);
  const int x2 = b.slice(n + ".x2", x, -1, D / 2, D, 1, true);
  const int rot = b.concat(n + ".rotate_half", {b.unary(n + ".neg", "Neg", x2), x1}, -1);
  return b.binary(n + ".add", "Add", b.binary(n + ".mul_cos", "Mul", x, cos), b.binary(n + ".mul_sin", "Mul", rot, sin));
}

}  // namespace

Result<LlamaConfig> llama_config(std::string_view name) {
  // Published configurations (config.json of meta-llama/Llama-3.2-1B, -3B, Llama-3.1-8B).
  static const std::vector<LlamaConfig> cfgs = {
      {"llama-3.2-1b", 2048, 8192, 16, 32, 8, 64, 128256, true},
      {"llama-3.2-3b", 3072, 8192, 28, 24, 8, 128, 128256, true},
      {"llama-3.1-8b", 4096, 14336, 32, 32, 8, 128, 128256, false},
  };
  for (const auto& c : cfgs) {
    if (c.name == name) return c;
  }
  return make_error(Errc::not_found, "unknown Llama configuration '" + std::string(name) + "'");
}

Result<Graph> build_llama(const LlamaConfig& c, const ModelOptions& o) {
  const bool decode = o.phase == "decode";
  if (!decode && o.phase != "prefill") {
    return make_error(Errc::invalid_argument, "--phase must be prefill or decode, got '" + o.phase + "'");
  }
  const int64_t S = decode ? 1 : o.prompt, past = decode ? o.context : 0, Bt = o.batch, D = c.head_dim;
  if (S <= 0 || past < 0 || Bt <= 0) return make_error(Errc::invalid_argument, "batch, prompt and context must be positive");
  B b(c.name + (decode ? "-decode" : "-prefill"), o.dtype);
  const int ids = b.input("input_ids", {Bt, S}, DType::i64);
  const int table = b.weight("model.embed_tokens.weight", {c.vocab, c.hidden});
  b.modules(3);  // LlamaForCausalLM, LlamaModel, embed_tokens
  int x = b.embedding("model.embed_tokens", table, ids);
  // Rotary cos/sin for the positions of this step (LlamaRotaryEmbedding: matmul, cat, cos, sin, casts).
  const int pos = b.input("position_ids", {1, S, D / 2}, DType::f32);
  b.modules(1);  // rotary_emb
  int freqs = b.binary("model.rotary_emb.freqs", "Mul", pos, b.weight("model.rotary_emb.inv_freq", {D / 2}, DType::f32));
  int emb = b.concat("model.rotary_emb.cat", {freqs, freqs}, -1);
  int cos = b.cast("model.rotary_emb.cos_cast", b.unary("model.rotary_emb.cos", "Cos", emb, 4, 1), o.dtype);
  int sin = b.cast("model.rotary_emb.sin_cast", b.unary("model.rotary_emb.sin", "Sin", emb, 4, 1), o.dtype);
  cos = b.reshape("model.rotary_emb.cos_view", cos, {1, 1, S, D});
  sin = b.reshape("model.rotary_emb.sin_view", sin, {1, 1, S, D});
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string n = "model.layers." + std::to_string(l);
    b.modules(2);  // LlamaDecoderLayer, input_layernorm
    int h = rmsnorm(b, n + ".input_layernorm", x, c.hidden);
    b.modules(1);  // self_attn
    auto proj = [&](const char* nm, int64_t heads) {
      b.modules(1);  // the projection's Linear
      int t = b.linear(n + ".self_attn." + nm, h, heads * D, false);
      t = b.reshape(n + ".self_attn." + nm + ".view", t, {Bt, S, heads, D});
      return b.transpose(n + ".self_attn." + nm + ".heads", t, {0, 2, 1, 3}, true);
    };
    int q = proj("q_proj", c.heads), k = proj("k_proj", c.kv_heads), v = proj("v_proj", c.kv_heads);
    q = rotary(b, n + ".self_attn.rope_q", q, cos, sin);
    k = rotary(b, n + ".self_attn.rope_k", k, cos, sin);
    if (decode) {
      const Shape cache{Bt, c.kv_heads, past, D};
      if (o.kv_concat) {  // DynamicCache.update: torch.cat([cache, new]) for keys and values
        k = b.concat(n + ".kv_cache.cat_k", {b.input(n + ".past_k", cache), k}, 2);
        v = b.concat(n + ".kv_cache.cat_v", {b.input(n + ".past_v", cache), v}, 2);
      } else {  // in-place write of the new token into a preallocated cache, then read the whole cache
        b.copy(n + ".kv_cache.write_k", k);
        b.copy(n + ".kv_cache.write_v", v);
        k = b.input(n + ".cache_k", {Bt, c.kv_heads, past + 1, D});
        v = b.input(n + ".cache_v", {Bt, c.kv_heads, past + 1, D});
      }
    }
    int a = b.attention(n + ".self_attn.sdpa", q, k, v, true);
    a = b.transpose(n + ".self_attn.merge", a, {0, 2, 1, 3});  // .transpose(1, 2).contiguous()
    a = b.reshape(n + ".self_attn.merge.view", a, {Bt, S, c.heads * D});
    b.modules(1);
    a = b.linear(n + ".self_attn.o_proj", a, c.hidden, false);
    x = b.binary(n + ".residual_attn", "Add", x, a);
    b.modules(1);
    h = rmsnorm(b, n + ".post_attention_layernorm", x, c.hidden);
    b.modules(2);  // mlp, gate_proj
    int g = b.linear(n + ".mlp.gate_proj", h, c.intermediate, false);
    b.modules(1);  // act_fn
    g = b.unary(n + ".mlp.act", "Silu", g, 4, 1);
    b.modules(1);
    const int u = b.linear(n + ".mlp.up_proj", h, c.intermediate, false);
    const int gu = b.binary(n + ".mlp.mul", "Mul", g, u);
    b.modules(1);
    h = b.linear(n + ".mlp.down_proj", gu, c.hidden, false);
    x = b.binary(n + ".residual_mlp", "Add", x, h);
  }
  b.modules(1);
  x = rmsnorm(b, "model.norm", x, c.hidden);
  if (!o.all_logits && S > 1) x = b.slice("logits_to_keep", x, 1, S - 1, S, 1, true);
  b.modules(1);  // lm_head
  const int lm = c.tied_embeddings ? b.transpose("lm_head.tied", table, {1, 0}, true)
                                   : b.weight("lm_head.weight", {c.hidden, c.vocab});
  b.output(b.matmul("lm_head", x, lm, "Gemm"));
  return b.finish();
}

namespace {

bool parse_dims(std::string_view s, char sep, std::vector<int64_t>& out) {
  out.clear();
  while (!s.empty()) {
    const auto p = s.find(sep);
    const std::string_view tok = s.substr(0, p);
    int64_t v = 0;
    const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size() || v <= 0) return false;
    out.push_back(v);
    if (p == std::string_view::npos) break;
    s.remove_prefix(p + 1);
  }
  return !out.empty();
}

Result<Graph> micro(std::string_view name, const ModelOptions& o) {
  const auto colon = name.find(':');
  const std::string kind(name.substr(0, colon));
  const std::string_view args = name.substr(colon + 1);
  std::vector<int64_t> d;
  auto bad = [&](const char* form) {
    return make_error(Errc::invalid_argument, "model '" + std::string(name) + "': expected " + form);
  };
  B b(std::string(name), o.dtype);
  if (kind == "gemm") {
    if (!parse_dims(args, 'x', d) || d.size() != 3) return bad("gemm:MxNxK");
    b.output(b.matmul("gemm", b.input("A", {d[0], d[2]}), b.weight("B", {d[2], d[1]})));
  } else if (kind == "copy" || kind == "add" || kind == "relu") {
    if (!parse_dims(args, 'x', d) || d.size() != 1) return bad((kind + ":ELEMENTS").c_str());
    const int x = b.input("x", {d[0]});
    if (kind == "copy") b.output(b.copy("copy", x));
    if (kind == "add") b.output(b.binary("add", "Add", x, b.input("y", {d[0]})));
    if (kind == "relu") b.output(b.unary("relu", "Relu", x));
  } else if (kind == "softmax" || kind == "layernorm" || kind == "sum") {
    if (!parse_dims(args, 'x', d) || d.size() != 2) return bad((kind + ":ROWSxCOLS").c_str());
    const int x = b.input("x", {d[0], d[1]});
    if (kind == "softmax") b.output(b.softmax("softmax", x));
    if (kind == "layernorm") b.output(b.layernorm("layernorm", x));
    if (kind == "sum") b.output(b.reduce("sum", "ReduceSum", x, {}, false));
  } else if (kind == "attention") {
    // attention:B,H,Sq,Skv,D[,causal]
    const bool causal = args.size() > 7 && args.substr(args.size() - 7) == ",causal";
    if (!parse_dims(causal ? args.substr(0, args.size() - 7) : args, ',', d) || d.size() != 5) {
      return bad("attention:B,H,Sq,Skv,D[,causal]");
    }
    const int q = b.input("q", {d[0], d[1], d[2], d[4]});
    const int k = b.input("k", {d[0], d[1], d[3], d[4]});
    const int v = b.input("v", {d[0], d[1], d[3], d[4]});
    b.output(b.attention("sdpa", q, k, v, causal));
  } else {
    return make_error(Errc::not_found, "unknown micro-graph '" + kind + "' (gemm, copy, add, relu, softmax, layernorm, sum, attention)");
  }
  return b.finish();
}

}  // namespace

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> m = {
      {"resnet18", "ResNet-18 (torchvision), NCHW image input", false},
      {"resnet50", "ResNet-50 v1.5 (torchvision)", false},
      {"mobilenet_v2", "MobileNetV2 (torchvision)", false},
      {"efficientnet_b0", "EfficientNet-B0 (torchvision)", false},
      {"vit_b_16", "ViT-B/16 (torchvision), 224x224 -> 197 tokens", false},
      {"bert_base", "BERT-base encoder (uncased vocabulary), --seq tokens", false},
      {"lstm", "2-layer LSTM, hidden 1024, --seq steps", false},
      {"llama-3.2-1b", "Llama-3.2-1B architecture: --phase prefill --prompt P | decode --context C", true},
      {"llama-3.2-3b", "Llama-3.2-3B architecture", true},
      {"llama-3.1-8b", "Llama-3.1-8B architecture", true},
      {"gemm:MxNxK", "one GEMM C[M,N] = A[M,K] B[K,N]", false},
      {"copy:N | add:N | relu:N", "one memory-bound pointwise op over N elements", false},
      {"softmax:RxC | layernorm:RxC | sum:RxC", "one row-wise op", false},
      {"attention:B,H,Sq,Skv,D[,causal]", "one fused attention", false},
  };
  return m;
}

std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t max) {
  auto dist = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) {
    std::size_t d = dist(name, c);
    // A candidate that contains the name (e.g. "h100" in "h100-sxm") is close whatever its length.
    std::string lc = c, ln(name);
    std::transform(lc.begin(), lc.end(), lc.begin(), [](unsigned char ch) { return std::tolower(ch); });
    std::transform(ln.begin(), ln.end(), ln.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (!ln.empty() && (lc.find(ln) != std::string::npos || ln.rfind(lc, 0) == 0)) d = std::min<std::size_t>(d, 1);
    if (d <= std::max<std::size_t>(2, c.size() / 2)) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

Result<Graph> build_model(std::string_view name, const ModelOptions& o) {
  if (o.batch <= 0) return make_error(Errc::invalid_argument, "--batch must be positive");
  if (name.find(':') != std::string_view::npos) return micro(name, o);
  if (name == "resnet18") return resnet(o, false, {2, 2, 2, 2}, "resnet18");
  if (name == "resnet50") return resnet(o, true, {3, 4, 6, 3}, "resnet50");
  if (name == "mobilenet_v2") return mobilenet_v2(o);
  if (name == "efficientnet_b0") return efficientnet_b0(o);
  if (name == "vit_b_16") return vit_b16(o);
  if (name == "bert_base") return bert_base(o);
  if (name == "lstm") return lstm(o);
  if (auto c = llama_config(name)) return build_llama(*c, o);
  std::vector<std::string> names;
  for (const auto& m : model_catalog()) {
    if (m.name.find(':') == std::string::npos) names.push_back(m.name);
  }
  std::string msg = "unknown model '" + std::string(name) + "'";
  const auto close = closest_names(name, names);
  if (!close.empty()) {
    msg += "; did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i) msg += (i ? ", " : "") + close[i];
    msg += "?";
  }
  return make_error(Errc::not_found, msg + " (jouleprof estimate --list-models; or an .onnx file)");
}

}  // namespace jouleprof::estimate
