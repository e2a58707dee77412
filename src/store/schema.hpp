// The store's SQL schema as a list of migrations: migrations()[k] takes user_version k to k+1.
// Append new migrations; never edit a released one (docs/store.md, "Schema").
#pragma once

#include <cstdint>
#include <vector>

namespace jouleprof::detail {

/// PRAGMA application_id of a jouleprof run store ("JPRF").
inline constexpr int32_t kStoreApplicationId = 0x4A505246;

struct Migration {
  int to_version;
  const char* sql;
};

const std::vector<Migration>& migrations();

}  // namespace jouleprof::detail
