// Fuzzes the /proc task text the CPU sampler and the collector check read (runtime/base/proc_task.h):
// whatever the bytes, task_stat_state() answers without reading outside them, and a state it
// returns is the letter that follows the last ") ".
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/proc_task.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  char state = fasthprof::task_stat_state(text);
  size_t last_paren = std::string_view::npos;
  for (size_t i = 0; i < size; ++i) {
    if (text[i] == ')') last_paren = i;
  }
  if (state != '\0') {
    bool where_expected = last_paren != std::string_view::npos && last_paren + 2 < size &&
                          text[last_paren + 1] == ' ' && text[last_paren + 2] == state;
    if (!where_expected) {
      std::fprintf(stderr, "proc_task_fuzz: state '%c' is not the letter after the last \") \"\n", state);
      std::abort();
    }
  } else if (last_paren != std::string_view::npos && last_paren + 2 < size && text[last_paren + 1] == ' ' &&
             text[last_paren + 2] == 'R') {
    std::fprintf(stderr, "proc_task_fuzz: a running task was not seen as running\n");
    std::abort();
  }
  bool collector = fasthprof::is_concurrent_collector_thread(text);
  if (collector && size < 7) std::abort();
  return 0;
}
