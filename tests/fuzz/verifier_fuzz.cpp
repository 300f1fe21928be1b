// Runs the HPROF verifier on arbitrary bytes: it must return an answer for anything, never crash,
// hang or read outside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "hprof_verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasthprof::VerifyOptions options;
  options.count_classes = true;
  fasthprof::VerifyResult result = fasthprof::verify_hprof(data, size, options);
  if (!result.ok && result.error.empty()) std::abort();
  if (result.ok) {
    std::string summary = fasthprof::format_verify_summary(result, true);
    if (summary.empty()) std::abort();
  }
  return 0;
}
