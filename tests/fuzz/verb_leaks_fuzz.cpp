// Runs `fasthprof leaks`: the object graph of a dump, its dominators, the suspects, their
// accumulation points and the paths to them, on arbitrary bytes as its FILE, with one of its option
// sets (picked by the input's last byte); tests/fuzz/verb_fuzz.h says what is checked.
#include <cstddef>
#include <cstdint>

#include "verb_fuzz.h"
#include "verbs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fasthprof::fuzz::InputFile input;
  static const std::vector<std::vector<std::string>> kOptions = {
      {},
      {"--json", "--share", "0.1", "--top", "50"},
      {"--weak", "--compressed", "--dump", "1"},
      {"--dump", "2", "--json", "--share", "100"}};
  const std::string& path = input.write(data, size);
  const std::vector<std::string>& options = fasthprof::fuzz::pick(kOptions, data, size);
  fasthprof::fuzz::run_verb(fasthprof::cli::leaks_main, "leaks", options, {path}, /*verdict_allowed=*/false);
  return 0;
}
