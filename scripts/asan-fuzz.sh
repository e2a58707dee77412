#!/usr/bin/env bash
# The property/fuzz tests of the parsers, the ONNX loader and the Kineto importer (tests/fuzz, issue 22) under
# AddressSanitizer and UndefinedBehaviorSanitizer: only the libraries they link are built (asan
# preset), so CI time stays small. Any report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset asan >/dev/null
cmake --build build/asan -j"$(nproc)" --target jouleprof_fuzz_tests jouleprof_fuzz_onnx_tests jouleprof_replay_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export RC_PARAMS="max_success=${JOULEPROF_FUZZ_CASES:-200} seed=22"
build/asan/tests/fuzz/jouleprof_fuzz_tests --gtest_brief=1
build/asan/tests/fuzz/jouleprof_fuzz_onnx_tests --gtest_brief=1
# The Kineto importer (issue 35): hostile args, truncation/corruption, pipes, long names, gzip caps.
build/asan/tests/replay/jouleprof_replay_tests --gtest_brief=1 \
  --gtest_filter='KinetoInputs*:KernelTable.TruncatedAndCorruptedTracesNeverCrash:KernelTable.SyntheticTracesCountExactly:KernelTable.BadInputsAreOneLineErrors'
