// Runs `fasthprof diff` on arbitrary bytes split in two files: at the second "JAVA PROFILE" header
// when there is one (a seed is two files one after the other), else the input against itself; with
// one of its option sets (picked by the input's last byte). tests/fuzz/verb_fuzz.h says what is
// checked; a --fail-if met (exit 1) is the verb's verdict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "verb_fuzz.h"
#include "verbs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fasthprof::fuzz::InputFile first;
  static fasthprof::fuzz::InputFile second;
  static const std::vector<std::vector<std::string>> kOptions = {
      {},
      {"--heap", "--fail-if", "bytes>0"},
      {"--sites", "--stacks", "--top", "2"},
      {"--cpu", "--stacks", "--fail-if", "count<=-1%"},
      {"--sites", "--value", "alloc-bytes", "--fail-if", "X:bytes>=1"}};
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t split = bytes.find("JAVA PROFILE", 1);
  if (split == std::string_view::npos) split = size;
  const std::string& a = first.write(data, split);
  const std::string& b = split < size ? second.write(data + split, size - split) : a;
  const std::vector<std::string>& options = fasthprof::fuzz::pick(kOptions, data, size);
  fasthprof::fuzz::run_verb(fasthprof::cli::diff_main, "diff", options, {a, b}, /*verdict_allowed=*/true);
  return 0;
}
