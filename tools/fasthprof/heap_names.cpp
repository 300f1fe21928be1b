#include "heap_names.h"

#include <sys/resource.h>

#include <cinttypes>
#include <cstdio>

namespace fasthprof::cli {

bool choose_dump(const char* verb, const Args& args, const HprofModel& model, size_t* index) {
  const size_t dumps = model.dumps().size();
  if (dumps == 0) {
    fail(verb, "the file holds no heap dump");
    return false;
  }
  *index = dumps - 1;
  if (!args.has(kDumpOption)) return true;
  uint64_t n = 0;
  const std::string_view text = args.value(kDumpOption);
  if (!parse_count(text, &n) || n == 0 || n > dumps) {
    fail(verb, "--dump takes a dump of the file, 1 to %zu, not \"%.*s\"", dumps, static_cast<int>(text.size()),
         text.data());
    return false;
  }
  *index = static_cast<size_t>(n - 1);
  return true;
}

std::string hex_id(uint64_t id) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, id);
  return text;
}

std::string object_label(const HeapGraph& graph, uint32_t node) {
  if (node == HeapGraph::kSuperRoot) return "<roots>";
  return graph.type_name(node) + " " + hex_id(graph.id(node));
}

uint64_t peak_resident_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace fasthprof::cli
