// Numbers read from a JSON document, checked once where they enter (issue 22): an integer field
// holds an integer within its type's range (2^80 is not an int64, -1 is not an unsigned, 1e300
// is not an integer), a real field a finite number. What fails throws nlohmann's type_error, so
// the reader's usual catch reports it with the document's name (and the JSON path where the
// reader builds with JSON_DIAGNOSTICS). Templated on the json type: that mode changes its ABI.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace jouleprof {

template <class Json>
[[noreturn]] void refuse_json(const Json& at, const std::string& what) {
  throw nlohmann::detail::type_error::create(302, what, &at);
}

template <class T, class Json>
T checked_json(const Json& v) {
  if constexpr (std::is_same_v<T, bool> || !std::is_arithmetic_v<T>) {
    return v.template get<T>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) refuse_json(v, "expected an integer, found " + v.dump());
    if (v.is_number_unsigned()) {
      if (v.template get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())) refuse_json(v, "integer out of range");
    } else if (v.template get<int64_t>() < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
               (std::is_signed_v<T> && v.template get<int64_t>() > static_cast<int64_t>(std::numeric_limits<T>::max()))) {
      refuse_json(v, "integer out of range");
    }
    return v.template get<T>();
  } else {
    if (!v.is_number() || !std::isfinite(v.template get<double>())) refuse_json(v, "expected a finite number");
    return v.template get<T>();
  }
}

}  // namespace jouleprof
