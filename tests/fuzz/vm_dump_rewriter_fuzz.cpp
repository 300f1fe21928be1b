// Runs VmDumpRewriter on arbitrary bytes as a JDK heap dump: it must accept or reject anything
// without crashing, hanging or reading outside the input, say why when it rejects, and give the
// same answer and the same output however the input is split into chunks.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sink/output_stream.h"
#include "vm_dump/vm_dump_rewriter.h"

namespace {

class Collect final : public fasthprof::OutputStream {
 public:
  void write(const void* data, size_t size) override {
    const auto* bytes = static_cast<const uint8_t*>(data);
    out.insert(out.end(), bytes, bytes + size);
  }
  std::vector<uint8_t> out;
};

struct Outcome {
  bool ok;
  std::string error;
  std::vector<uint8_t> out;
};

Outcome finish(const fasthprof::VmDumpRewriter& rewriter, Collect& stream, bool ok, size_t size) {
  if (!ok && rewriter.error().empty()) std::abort();
  if (rewriter.stats().bytes_out != stream.out.size()) std::abort();
  if (ok && stream.out.size() > size) std::abort();  // records are only ever dropped, never grown
  return {ok, rewriter.error(), std::move(stream.out)};
}

// chunk 0: the whole input at once through feed(); otherwise chunks of that size, in place.
Outcome rewrite(const uint8_t* data, size_t size, size_t chunk) {
  fasthprof::VmDumpNumbering numbering;
  Collect stream;
  fasthprof::VmDumpRewriter rewriter(numbering, stream);
  bool ok = true;
  if (chunk == 0) {
    ok = rewriter.feed(data, size);
  } else {
    std::vector<uint8_t> copy(data, data + size);
    for (size_t at = 0; at < size && ok; at += chunk) {
      ok = rewriter.feed_in_place(copy.data() + at, std::min(chunk, size - at));
    }
  }
  ok = ok && rewriter.finish();
  return finish(rewriter, stream, ok, size);
}

// The first `head` bytes in memory, the rest from a file (feed_file, as JDK 22+ side files are read).
Outcome rewrite_with_file(const uint8_t* data, size_t size, size_t head) {
  fasthprof::VmDumpNumbering numbering;
  Collect stream;
  fasthprof::VmDumpRewriter rewriter(numbering, stream);
  int fd = memfd_create("side", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (size > head && write(fd, data + head, size - head) != static_cast<ssize_t>(size - head)) std::abort();
  bool ok = rewriter.feed(data, head);
  ok = ok && (size == head || rewriter.feed_file(fd, size - head));
  ok = ok && rewriter.finish();
  close(fd);
  return finish(rewriter, stream, ok, size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Outcome whole = rewrite(data, size, 0);
  // A chunk size taken from the input, so that the fuzzer explores the splits too.
  size_t chunk = size == 0 ? 1 : 1 + data[size - 1] % 61;
  Outcome split = rewrite(data, size, chunk);
  if (whole.ok != split.ok || whole.error != split.error) std::abort();
  // Output before an error may differ in how much was flushed; a success is byte for byte the same.
  if (whole.ok && whole.out != split.out) std::abort();
  // The same through a file for all but the first bytes (a count taken from the input).
  Outcome filed = rewrite_with_file(data, size, size == 0 ? 0 : data[0] % (size + 1));
  if (whole.ok != filed.ok || whole.error != filed.error) std::abort();
  if (whole.ok && whole.out != filed.out) std::abort();
  return 0;
}
