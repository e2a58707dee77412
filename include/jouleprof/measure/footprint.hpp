// Carbon and cost of a measurement (docs/energy-methods.md "Carbon and cost"): GPU energy turned
// into gCO2e and money per window, per repeat and per counted unit (token ...), with the energy's
// uncertainty carried through. Stored as the result section "footprint", so the JSON, the run
// store, `runs show` and reports carry it without knowing this module.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {

inline constexpr const char* kFootprintSchema = "jouleprof.footprint/1";
inline constexpr const char* kFootprintSection = "footprint";

struct FootprintSettings {
  std::optional<double> carbon_g_per_kwh;  ///< grid carbon intensity, gCO2e per kWh
  std::string carbon_source;               ///< where the figure came from (flag, variable, config line) and the user's note
  std::optional<double> price_per_kwh;     ///< electricity price per kWh (the currency is the user's)
  std::string price_source;
  bool any() const { return carbon_g_per_kwh.has_value() || price_per_kwh.has_value(); }
};

/// Inputs, first found wins: the flags (nullopt: not given), then $JOULEPROF_CARBON_INTENSITY and
/// $JOULEPROF_PRICE, then the config file ($JOULEPROF_CONFIG, else $XDG_CONFIG_HOME/jouleprof/config,
/// else ~/.config/jouleprof/config: `carbon-intensity = 350`, `price = 0.30`, `carbon-source = TEXT`,
/// `#` comments). `note` (--carbon-source, $JOULEPROF_CARBON_SOURCE, config `carbon-source`)
/// says where the intensity itself comes from (a grid operator's figure, a year ...). A value that
/// is not a number in range is an error naming where it was read.
/// `names`: how the caller's own inputs are spelled, in errors and in the recorded source (the
/// CLI's flags by default; the Python package passes its keyword arguments).
struct FootprintNames {
  const char* carbon = "--carbon-intensity";
  const char* price = "--price";
  const char* source = "--carbon-source";
};
Result<FootprintSettings> resolve_footprint(std::optional<double> carbon_flag, std::optional<double> price_flag,
                                            const std::string& carbon_note_flag, const FootprintNames& names = {});

/// One window's carbon and cost (JSON text: energy_kwh, gco2e and cost with their `_uncertainty`
/// from the energy's bound, `per` counted unit), as in the section's `windows` entries.
std::string window_footprint_json(const WindowResult& w, const FootprintSettings& s);

/// The "footprint" section (JSON text) of a finished measurement.
std::string footprint_section_json(const Measurement& m, const FootprintSettings& s);

/// Adds the section to m (replacing one there). Nothing when no setting is given.
void add_footprint(Measurement& m, const FootprintSettings& s);

/// The section for people (the run store's `runs show` and measure's summary print it).
void print_footprint(const std::string& section_json, std::ostream& out);

}  // namespace jouleprof
