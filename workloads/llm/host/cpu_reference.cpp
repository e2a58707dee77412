#include "cpu_reference.hpp"

#include <cmath>
#include <limits>

#include "numeric.hpp"

namespace jouleprof::llm {

namespace {
// y[j] = sum_k W[j, k] x[k], W row-major [n, k].
void matvec(const std::vector<float>& w, const float* x, int n, int k, float* y) {
  for (int j = 0; j < n; ++j) {
    const float* row = w.data() + static_cast<std::size_t>(j) * k;
    double acc = 0;
    for (int i = 0; i < k; ++i) acc += static_cast<double>(row[i]) * static_cast<double>(x[i]);
    y[j] = static_cast<float>(acc);
  }
}
}  // namespace

CpuModel::CpuModel(LlmConfig c, HostWeights w, CpuOptions o) : c_(std::move(c)), w_(std::move(w)), o_(o) {
  for (double f : rope_inv_freq(c_)) inv_freq_.push_back(static_cast<float>(f));
}

float CpuModel::r(float x) const { return o_.round_activations ? round_to(o_.dtype, x) : x; }

void CpuModel::reset(int sequences, int max_context) {
  max_ctx_ = max_context;
  len_.assign(static_cast<std::size_t>(sequences), 0);
  const std::size_t per = static_cast<std::size_t>(c_.layers) * max_context * c_.kv_dim();
  k_.assign(static_cast<std::size_t>(sequences), std::vector<float>(per));
  v_.assign(static_cast<std::size_t>(sequences), std::vector<float>(per));
}

void CpuModel::rmsnorm(const float* x, const float* w, int n, double eps, float* out) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  const double inv = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<double>(x[i]) * inv * static_cast<double>(w[i]));
}

void CpuModel::rope(float* v, int head_dim, int pos, const std::vector<float>& inv_freq) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {
    const double a = static_cast<double>(pos) * static_cast<double>(inv_freq[static_cast<std::size_t>(i)]);
    const double cs = std::cos(a), sn = std::sin(a);
    const double x1 = static_cast<double>(v[i]), x2 = static_cast<double>(v[i + half]);
    v[i] = static_cast<float>(x1 * cs - x2 * sn);
    v[i + half] = static_cast<float>(x2 * cs + x1 * sn);
  }
}

float CpuModel::silu(float x) { return static_cast<float>(static_cast<double>(x) / (1.0 + std::exp(-static_cast<double>(x)))); }

Result<std::vector<float>> CpuModel::forward(int seq, const std::vector<int>& tokens, bool all_logits) {
  if (seq < 0 || static_cast<std::size_t>(seq) >= len_.size()) return make_error(Errc::invalid_argument, "no such sequence");
  const int H = c_.hidden, hd = c_.head_dim, qd = c_.q_dim(), kvd = c_.kv_dim(), I = c_.intermediate;
  const int g = c_.group();
  std::vector<float> logits;
  std::vector<float> x(H), xn(H), q(qd), k(kvd), v(kvd), o(qd), y(H), gate(I), up(I), act(I), sc;
  auto& K = k_[static_cast<std::size_t>(seq)];
  auto& V = v_[static_cast<std::size_t>(seq)];
  for (std::size_t ti = 0; ti < tokens.size(); ++ti) {
    const int tok = tokens[ti];
    if (tok < 0 || tok >= c_.vocab) return make_error(Errc::invalid_argument, "token id " + std::to_string(tok) + " outside the vocabulary");
    int& p = len_[static_cast<std::size_t>(seq)];
    if (p >= max_ctx_) return make_error(Errc::invalid_argument, "sequence longer than the context");
    for (int i = 0; i < H; ++i) x[i] = w_.embed[static_cast<std::size_t>(tok) * H + i];
    for (int l = 0; l < c_.layers; ++l) {
      const LayerWeights& L = w_.layers[static_cast<std::size_t>(l)];
      rmsnorm(x.data(), L.attn_norm.data(), H, c_.rms_eps, xn.data());
      for (float& f : xn) f = r(f);
      matvec(L.wq, xn.data(), qd, H, q.data());
      matvec(L.wk, xn.data(), kvd, H, k.data());
      matvec(L.wv, xn.data(), kvd, H, v.data());
      for (float& f : q) f = r(f);
      for (float& f : k) f = r(f);
      for (float& f : v) f = r(f);
      for (int h = 0; h < c_.heads; ++h) rope(q.data() + h * hd, hd, p, inv_freq_);
      for (int h = 0; h < c_.kv_heads; ++h) rope(k.data() + h * hd, hd, p, inv_freq_);
      float* kc = K.data() + (static_cast<std::size_t>(l) * max_ctx_ + p) * kvd;
      float* vc = V.data() + (static_cast<std::size_t>(l) * max_ctx_ + p) * kvd;
      for (int i = 0; i < kvd; ++i) {
        kc[i] = r(k[i]);
        vc[i] = v[i];
      }
      const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
      sc.resize(static_cast<std::size_t>(p) + 1);
      for (int h = 0; h < c_.heads; ++h) {
        const int kh = h / g;
        double mx = -std::numeric_limits<double>::infinity();
        for (int t = 0; t <= p; ++t) {
          const float* kt = K.data() + (static_cast<std::size_t>(l) * max_ctx_ + t) * kvd + kh * hd;
          double s = 0;
          for (int i = 0; i < hd; ++i) s += static_cast<double>(q[h * hd + i]) * static_cast<double>(kt[i]);
          sc[static_cast<std::size_t>(t)] = static_cast<float>(s * scale);
          mx = std::max(mx, s * scale);
        }
        double sum = 0;
        std::vector<double> pr(static_cast<std::size_t>(p) + 1);
        for (int t = 0; t <= p; ++t) sum += pr[static_cast<std::size_t>(t)] = std::exp(static_cast<double>(sc[static_cast<std::size_t>(t)]) - mx);
        for (int i = 0; i < hd; ++i) {
          double acc = 0;
          for (int t = 0; t <= p; ++t) {
            acc += pr[static_cast<std::size_t>(t)] * static_cast<double>(V[(static_cast<std::size_t>(l) * max_ctx_ + t) * kvd + kh * hd + i]);
          }
          o[h * hd + i] = r(static_cast<float>(acc / sum));
        }
      }
      matvec(L.wo, o.data(), H, qd, y.data());
      for (int i = 0; i < H; ++i) x[i] += y[i];
      rmsnorm(x.data(), L.mlp_norm.data(), H, c_.rms_eps, xn.data());
      for (float& f : xn) f = r(f);
      matvec(L.wg, xn.data(), I, H, gate.data());
      matvec(L.wu, xn.data(), I, H, up.data());
      for (int i = 0; i < I; ++i) act[i] = r(silu(r(gate[i])) * r(up[i]));
      matvec(L.wd, act.data(), H, I, y.data());
      for (int i = 0; i < H; ++i) x[i] += y[i];
    }
    ++p;
    if (all_logits || ti + 1 == tokens.size()) {
      rmsnorm(x.data(), w_.final_norm.data(), H, c_.rms_eps, xn.data());
      for (float& f : xn) f = r(f);
      const std::size_t off = logits.size();
      logits.resize(off + static_cast<std::size_t>(c_.vocab));
      matvec(w_.head(), xn.data(), c_.vocab, H, logits.data() + off);
    }
  }
  return logits;
}

Result<std::vector<int>> CpuModel::generate(int seq, const std::vector<int>& prompt, int gen, std::vector<float>* logits) {
  std::vector<int> out;
  auto lg = forward(seq, prompt, false);
  if (!lg) return lg.error();
  for (int i = 0; i < gen; ++i) {
    const int t = argmax(lg->data(), c_.vocab);
    out.push_back(t);
    if (logits) logits->insert(logits->end(), lg->begin(), lg->end());
    if (i + 1 == gen) break;
    lg = forward(seq, {t}, false);
    if (!lg) return lg.error();
  }
  return out;
}

int argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return best;
}

double rel_l2(const float* a, const float* b, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    num += d * d;
    den += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : (num > 0 ? std::numeric_limits<double>::infinity() : 0);
}

}  // namespace jouleprof::llm
