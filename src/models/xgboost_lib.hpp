// Debian's libxgboost (C API), loaded at run time like the vendor libraries: the xgboost form is
// the only user, and a machine without the library still runs every other form.
#pragma once

#include <cstdint>
#include <string>

#include "jouleprof/core/error.hpp"

namespace jouleprof::models::detail {

// Types as in xgboost/c_api.h (1.x), declared here so that the header is not needed.
using XgbUlong = std::uint64_t;
using XgbHandle = void*;

#define JOULEPROF_XGB_ENTRY_POINTS(X)                                                                      \
  X(XGBGetLastError, const char*, ())                                                                      \
  X(XGDMatrixCreateFromMat, int, (const float*, XgbUlong, XgbUlong, float, XgbHandle*))                    \
  X(XGDMatrixSetFloatInfo, int, (XgbHandle, const char*, const float*, XgbUlong))                          \
  X(XGDMatrixFree, int, (XgbHandle))                                                                       \
  X(XGBoosterCreate, int, (const XgbHandle*, XgbUlong, XgbHandle*))                                        \
  X(XGBoosterFree, int, (XgbHandle))                                                                       \
  X(XGBoosterSetParam, int, (XgbHandle, const char*, const char*))                                         \
  X(XGBoosterUpdateOneIter, int, (XgbHandle, int, XgbHandle))                                              \
  X(XGBoosterPredict, int, (XgbHandle, XgbHandle, int, unsigned, int, XgbUlong*, const float**))           \
  X(XGBoosterSaveModelToBuffer, int, (XgbHandle, const char*, XgbUlong*, const char**))                    \
  X(XGBoosterLoadModelFromBuffer, int, (XgbHandle, const void*, XgbUlong))

struct XgbApi {
#define JOULEPROF_XGB_PTR(name, ret, args) ret(*name) args = nullptr;
  JOULEPROF_XGB_ENTRY_POINTS(JOULEPROF_XGB_PTR)
#undef JOULEPROF_XGB_PTR
};

/// The loaded library ($JOULEPROF_XGBOOST_LIB, else libxgboost.so.0, else libxgboost.so), or an
/// `unavailable` error naming the Debian package.
Result<const XgbApi*> xgboost_api();
/// Checks an xgboost return code; the error carries the call and XGBGetLastError().
Result<void> xgb_check(const XgbApi& api, int rc, const char* call);

}  // namespace jouleprof::models::detail
