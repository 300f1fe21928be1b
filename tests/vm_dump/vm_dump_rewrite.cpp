// Test driver for runtime/vm_dump/vm_dump_rewriter: writes a fasthprof-like binary file made of fasthprof's
// own header (ProfileWriter: JAVA PROFILE 1.0.2, CONTROL SETTINGS, the empty TRACE 300000) followed
// by the JDK heap dumps named on the command line, each rewritten as the agent will insert it, with
// one numbering for the whole file. The JDK's files are fed in chunks of varying, odd sizes, so that
// records and sub-records are split at many places.
//
//   vm_dump_rewrite [--chunk N] <output> <jdk dump> [<jdk dump> ...]
//
// Prints one stats line per dump on stdout; on malformed input prints the rewriter's error on
// stderr and exits 1.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "options/options.h"
#include "records/profile_writer.h"
#include "sink/output_stream.h"
#include "vm_dump/vm_dump_rewriter.h"

namespace {

class FileStream final : public fasthprof::OutputStream {
 public:
  explicit FileStream(FILE* file) : file_(file) {}
  void write(const void* data, size_t size) override {
    if (std::fwrite(data, 1, size, file_) != size) failed = true;
  }
  bool failed = false;

 private:
  FILE* file_;
};

}  // namespace

int main(int argc, char** argv) {
  size_t chunk = 0;  // 0: varying sizes
  int arg = 1;
  if (arg + 1 < argc && std::strcmp(argv[arg], "--chunk") == 0) {
    chunk = std::strtoull(argv[arg + 1], nullptr, 10);
    arg += 2;
  }
  if (argc - arg < 2) {
    std::fprintf(stderr, "usage: vm_dump_rewrite [--chunk N] <output> <jdk dump> [<jdk dump> ...]\n");
    return 2;
  }
  FILE* output = std::fopen(argv[arg], "wb");
  if (output == nullptr) {
    std::perror(argv[arg]);
    return 2;
  }
  FileStream stream(output);
  fasthprof::ParseResult parsed = fasthprof::parse_options("format=b", nullptr);
  fasthprof::ProfileWriter writer(parsed.options, stream, nullptr);
  writer.write_header(std::time(nullptr), static_cast<uint64_t>(std::time(nullptr)) * 1000);
  writer.flush();

  fasthprof::VmDumpNumbering numbering;
  std::vector<uint8_t> buffer(1 << 20);
  const size_t sizes[] = {1, 7, 4093, 65536, 9, 1 << 20, 31, 100003};
  size_t turn = 0;
  for (int i = arg + 1; i < argc; ++i) {
    FILE* input = std::fopen(argv[i], "rb");
    if (input == nullptr) {
      std::perror(argv[i]);
      return 2;
    }
    fasthprof::VmDumpRewriter rewriter(numbering, stream);
    bool ok = true;
    for (;;) {
      size_t want = chunk != 0 ? chunk : sizes[turn++ % (sizeof(sizes) / sizeof(sizes[0]))];
      want = want < buffer.size() ? want : buffer.size();
      size_t got = std::fread(buffer.data(), 1, want, input);
      if (got == 0) break;
      // Alternate the copying and the in-place entry points.
      ok = (turn % 2) ? rewriter.feed_in_place(buffer.data(), got) : rewriter.feed(buffer.data(), got);
      if (!ok) break;
    }
    std::fclose(input);
    if (ok) ok = rewriter.finish();
    if (!ok) {
      std::fprintf(stderr, "%s: %s\n", argv[i], rewriter.error().c_str());
      return 1;
    }
    const fasthprof::VmDumpStats& s = rewriter.stats();
    std::printf("%s: in %" PRIu64 " out %" PRIu64 " records %" PRIu64 " dropped %" PRIu64 " segments %" PRIu64
                " sub-records %" PRIu64 " utf8-dropped %" PRIu64 " utf8-renamed %" PRIu64 "\n",
                argv[i], s.bytes_in, s.bytes_out, s.records, s.records_dropped, s.segments, s.sub_records,
                s.utf8_dropped, s.utf8_renamed);
  }
  if (std::fclose(output) != 0 || stream.failed) {
    std::perror(argv[arg]);
    return 2;
  }
  return 0;
}
