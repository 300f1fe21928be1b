// The text hprof-verify prints for a file that passes.
#include <cinttypes>
#include <cstdio>

#include "base/hprof_format.h"
#include "hprof_verifier.h"

namespace fasthprof {

std::string format_verify_summary(const VerifyResult& result, bool classes) {
  std::string out;
  char line[256];
  auto add = [&](const char* format, auto... args) {
    std::snprintf(line, sizeof(line), format, args...);
    out += line;
  };
  add("%s, identifier size %" PRIu32 ", time stamp %" PRIu64 " ms\n", result.version.c_str(), result.id_size,
      result.timestamp_millis);
  uint64_t total = 0;
  for (uint64_t count : result.record_counts) total += count;
  add("records: %" PRIu64 "\n", total);
  for (size_t tag = 0; tag < result.record_counts.size(); ++tag) {
    if (result.record_counts[tag]) {
      add("  %-20s %12" PRIu64 "\n", record_tag_name(static_cast<uint8_t>(tag)), result.record_counts[tag]);
    }
  }
  add("heap dumps: %zu\n", result.dumps.size());
  for (size_t i = 0; i < result.dumps.size(); ++i) {
    const DumpSummary& dump = result.dumps[i];
    add("  dump %zu at byte %" PRIu64 ": %" PRIu64 " segments, %" PRIu64 " classes, %" PRIu64 " instances, %" PRIu64
        " object arrays, %" PRIu64 " primitive arrays, %" PRIu64 " roots\n",
        i + 1, dump.offset, dump.segments, dump.classes, dump.instances, dump.object_arrays, dump.primitive_arrays,
        dump.roots);
    if (dump.unresolved_references) {
      add("    %" PRIu64 " references to objects that are not in the dump\n", dump.unresolved_references);
    }
    for (size_t tag = 0; tag < dump.sub_record_counts.size(); ++tag) {
      if (dump.sub_record_counts[tag]) {
        add("    %-20s %12" PRIu64 "\n", heap_tag_name(static_cast<uint8_t>(tag)), dump.sub_record_counts[tag]);
      }
    }
    if (classes) {
      add("  dump %zu objects per class:\n", i + 1);
      for (const auto& [name, count] : dump.class_counts) {
        out += "    ";
        add("%12" PRIu64 "  ", count);
        out += name;
        out += '\n';
      }
    }
  }
  return out;
}

}  // namespace fasthprof
