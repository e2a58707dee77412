// Output of `jouleprof estimate`: the hierarchical tree (model -> subgraph -> event class ->
// event), JSON, CSV, the multi-hardware comparison table and the catalog listings.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/estimate/estimate.hpp"
#include "jouleprof/estimate/hardware.hpp"

namespace jouleprof::estimate {

struct TreeOptions {
  std::size_t top = 8;  ///< subgraphs shown (by energy); the rest are summed in one line
};

std::string render_tree(const Estimate& e, const TreeOptions& opt = {});
/// JSON (schema_version 1): totals, event totals, every subgraph with its events.
std::string to_json(const Estimate& e, int indent = 2);
/// {"schema_version": 1, "estimates": [...]}, one per hardware target, whatever the count.
std::string to_json(const std::vector<Estimate>& es, int indent = 2);
/// CSV: one row per (hardware, subgraph, event), plus per-hardware total rows.
std::string to_csv(const std::vector<Estimate>& es);
std::string render_comparison(const std::vector<Estimate>& es);
std::string render_hw_list(const Catalog& c);
std::string render_model_list();

}  // namespace jouleprof::estimate
