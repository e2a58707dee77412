#include "decode_plan.hpp"

#include <optional>

#include "sampling.hpp"

namespace jouleprof::llm {

const char* plan_name(PlanKind k) {
  switch (k) {
    case PlanKind::separate: return "separate";
    case PlanKind::cluster: return "cluster";
    case PlanKind::dataflow: return "dataflow";
  }
  return "?";
}

// Every entry is a measurement on the H100 (docs/validation/bench-llm.md, "Decode plans"):
std::vector<PlanKind> default_plans(const PlanSituation& s) {
  std::vector<PlanKind> plans;
  // dataflow: 1B batch 1 +4% tok/s over cluster at contexts 128-512, +10..35% at 1k-8k, J/token within
  // the spread; for hidden > 2048 it draws ~50 W more (8B at 1k: +6.5% J/token), so not there.
  if (s.batch == 1 && s.sm_major == 9 && s.hidden <= 2048 && s.context <= 8192) plans.push_back(PlanKind::dataflow);
  // cluster: batch 1 on sm_90, 1B/3B/8B 2-7% faster than separate while each CTA's share of the
  // context is one 64-position tile (the plan checks that: it knows its cluster size); beyond, slower.
  if (s.batch == 1 && s.sm_major >= 9) plans.push_back(PlanKind::cluster);
  // separate: everywhere else (GEMV up to batch 2, cuBLAS above: cuBLAS faster from batch 8 on).
  plans.push_back(PlanKind::separate);
  return plans;
}

std::string plan_option_words(PlanKind k) {
  switch (k) {
    case PlanKind::separate: return "gemv, cublas";
    case PlanKind::cluster: return "ctasN (CTAs per KV head, 2-16)";
    case PlanKind::dataflow: return "slotsN (2-32), chunkN (KiB, 1-64), l2waitN (0-256), spanN (positions per split), release";
  }
  return "";
}

namespace {
constexpr const char* kCommonWords = "nopdl";

/// The number after `prefix` in w ("slots4" -> 4) when w is prefix + digits: nullopt when w is
/// not such a word, an error when the number is outside [lo, hi].
std::optional<Result<int>> number_word(const std::string& w, const std::string& prefix, int lo, int hi) {
  if (w.size() <= prefix.size() || w.compare(0, prefix.size(), prefix) != 0 ||
      w.find_first_not_of("0123456789", prefix.size()) != std::string::npos) {
    return std::nullopt;
  }
  const std::string digits = w.substr(prefix.size());
  const long long v = digits.size() > 9 ? -1 : std::stoll(digits);
  if (v < lo || v > hi) {
    return Result<int>(make_error(Errc::invalid_argument, "engine variant '" + w + "': the number must be between " +
                                                              std::to_string(lo) + " and " + std::to_string(hi)));
  }
  return Result<int>(static_cast<int>(v));
}

/// Applies a word of plan k's options; false when it is not one.
Result<bool> plan_word(PlanKind k, const std::string& w, DecodeRequest& r) {
  auto num = [&](const char* prefix, int lo, int hi, int& out) -> std::optional<Result<bool>> {
    auto v = number_word(w, prefix, lo, hi);
    if (!v) return std::nullopt;
    if (!*v) return Result<bool>(v->error());
    out = **v;
    return Result<bool>(true);
  };
  switch (k) {
    case PlanKind::separate:
      if (w == "gemv") r.separate.matvec = SeparateOptions::Matvec::gemv;
      else if (w == "cublas") r.separate.matvec = SeparateOptions::Matvec::cublas;
      else return false;
      return true;
    case PlanKind::cluster:
      if (auto v = num("ctas", 2, 16, r.cluster.ctas)) return *v;
      return false;
    case PlanKind::dataflow:
      if (w == "release") {
        r.dataflow.bulk_handover = false;
        return true;
      }
      struct Numbered {
        const char* prefix;
        int lo, hi;
        int* field;
      };
      for (const Numbered& n : {Numbered{"slots", 2, 32, &r.dataflow.slots}, Numbered{"chunk", 1, 64, &r.dataflow.chunk_kb},
                                Numbered{"l2wait", 0, 256, &r.dataflow.l2_wait},
                                Numbered{"span", 1, 1 << 20, &r.dataflow.span}}) {
        if (auto v = num(n.prefix, n.lo, n.hi, *n.field)) return *v;
      }
      return false;
  }
  return false;
}
}  // namespace

Result<VariantSettings> parse_variant(const std::string& variant) {
  VariantSettings out;
  bool first = true;
  std::size_t i = 0;
  while (i <= variant.size()) {
    std::size_t j = variant.find('+', i);
    if (j == std::string::npos) j = variant.size();
    const std::string w = variant.substr(i, j - i);
    i = j + 1;
    if (w.empty()) continue;
    const bool was_first = first;
    first = false;
    DecodeRequest& r = out.plan;
    if (w == "auto" || w == "separate" || w == "cluster" || w == "dataflow") {
      if (!was_first) {
        return make_error(Errc::invalid_argument, "engine variant '" + variant + "': the plan ('" + w +
                                                      "') comes first, and only one");
      }
      r.automatic = w == "auto";
      if (w == "separate") r.kind = PlanKind::separate;
      if (w == "cluster") r.kind = PlanKind::cluster;
      if (w == "dataflow") r.kind = PlanKind::dataflow;
      continue;
    }
    // Graphs and sampling have one spelling each: the flags (issue 31).
    if (w == "nograph") return make_error(Errc::invalid_argument, "engine variant word 'nograph' is --no-graphs");
    if (w == "nopdl") {
      out.pdl = false;
      continue;
    }
    if (w.rfind("topk", 0) == 0) return make_error(Errc::invalid_argument, "engine variant word '" + w + "' is --top-k N");
    if (!r.automatic) {
      auto applied = plan_word(r.kind, w, r);
      if (!applied) return applied.error();
      if (*applied) continue;
      return make_error(Errc::invalid_argument, "engine variant word '" + w + "' is not an option of the " +
                                                    plan_name(r.kind) + " plan; its options: " +
                                                    plan_option_words(r.kind) + " (and " + kCommonWords + ")");
    }
    return make_error(Errc::invalid_argument,
                      "engine variant word '" + w + "' is not a plan or a common option; plans: auto, separate, cluster, dataflow "
                      "(each plan's options follow it, e.g. dataflow+slots4); common options: " + kCommonWords);
  }
  return out;
}

}  // namespace jouleprof::llm
