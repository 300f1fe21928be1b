// Runs `fasthprof path`: the object graph of a dump, a breadth-first search from its roots and the
// naming of each reference, on arbitrary bytes as its FILE, to the largest objects of a class or
// to an ID, with one of its option sets (picked by the input's last byte); tests/fuzz/verb_fuzz.h
// says what is checked. Exit 1 (no root reaches the object) is a verdict, not a failure.
#include <cstddef>
#include <cstdint>

#include "verb_fuzz.h"
#include "verbs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fasthprof::fuzz::InputFile input;
  static const std::vector<std::vector<std::string>> kOptions = {
      {},
      {"--weak", "--json"},
      {"--top", "50", "--dump", "1"}};
  static const std::vector<std::vector<std::string>> kTargets = {{"byte[]"}, {"java.lang.Object[]"}, {"0x1000"}};
  const std::string& path = input.write(data, size);
  const std::vector<std::string>& options = fasthprof::fuzz::pick(kOptions, data, size);
  const std::vector<std::string>& target = fasthprof::fuzz::pick(kTargets, data, size > 1 ? size - 1 : size);
  fasthprof::fuzz::run_verb(fasthprof::cli::path_main, "path", options, {path, target[0]},
                            /*verdict_allowed=*/true);
  return 0;
}
