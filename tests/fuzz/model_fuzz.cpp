// Runs what every verb of the `fasthprof` command does with an input on arbitrary bytes: gzip
// decompression when the bytes are gzip (hprof_input.h), the model's one pass (hprof_model.h), and
// the names the verbs print from it (classes, frames, folded stacks). It must return an answer
// for anything: never crash, hang or read outside the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hprof_input.h"
#include "hprof_model.h"

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "model_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasthprof::HprofInput input;
  std::string error;
  if (fasthprof::looks_like_gzip(data, size)) {
    if (!input.inflate(data, size, &error)) {
      if (error.empty()) broken("a gzip input failed with no message");
      return 0;
    }
    data = input.data();
    size = input.size();
  }
  fasthprof::HprofModel model;
  fasthprof::ReadError read_error;
  const bool ok = model.load(data, size, &read_error);
  if (!ok && read_error.message.empty()) broken("the model failed with no message");
  if (read_error.offset > size) broken("an error offset past the end");
  size_t names = 0;
  for (const fasthprof::SitesSection& section : model.sites()) {
    for (const fasthprof::SiteRow& row : section.rows) {
      names += model.site_class_name(row).size() + model.folded_stack(row.trace_serial, true).size();
    }
  }
  for (const fasthprof::CpuSamplesSection& section : model.cpu()) {
    for (const fasthprof::CpuRow& row : section.rows) names += model.folded_stack(row.trace_serial, false).size();
  }
  for (const fasthprof::HeapDumpInfo& dump : model.dumps()) {
    uint64_t bytes = 0;
    for (const fasthprof::HistogramRow& row : dump.histogram) {
      if (row.name.empty()) broken("a histogram row with no name");
      bytes += row.bytes;
    }
    if (bytes != dump.total_bytes) broken("a histogram whose rows do not add up to its total");
  }
  return names == SIZE_MAX ? 1 : 0;
}
