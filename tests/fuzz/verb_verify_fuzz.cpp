// Runs `fasthprof verify` (and hprof-verify): gzip input, the verifier and its summary, on
// arbitrary bytes as its FILE, with one of its option sets (picked by the input's last byte);
// tests/fuzz/verb_fuzz.h says what is checked.
#include <cstddef>
#include <cstdint>

#include "verb_fuzz.h"
#include "verbs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fasthprof::fuzz::InputFile input;
  static const std::vector<std::vector<std::string>> kOptions = {
      {},
      {"--strict"},
      {"--classes"},
      {"--strict", "--classes"}};
  const std::string& path = input.write(data, size);
  const std::vector<std::string>& options = fasthprof::fuzz::pick(kOptions, data, size);
  fasthprof::fuzz::run_verb(fasthprof::cli::verify_main, "verify", options, {path},
                            /*verdict_allowed=*/true);
  return 0;
}
