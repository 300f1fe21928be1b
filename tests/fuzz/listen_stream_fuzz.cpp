// Fuzzes what `fasthprof listen` does with one connection's bytes (tools/fasthprof/stream_recorder:
// the kind of stream, following binary and text records and gzip members, cutting back): any
// bytes, in pieces of sizes the input chooses, into a memory file that may refuse to grow past a
// size the input chooses (a full disk). Input: a byte seeding the piece sizes, a byte choosing
// the limit (0: none), then the stream. After the end of the stream the file must be a prefix of
// what came (its bytes, or for gzip its plain bytes), and when the collector followed the stream
// it must end on a complete record outside a heap dump (binary), a whole line (text), or a whole
// gzip member (gzip); the sizes it reports must be the file's.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "stream_recorder.h"

namespace {

using fasthprof::cli::StreamFrame;
using fasthprof::cli::StreamRecorder;
using Bytes = std::vector<uint8_t>;

[[noreturn]] void fail(const char* what, const std::string& note) {
  std::fprintf(stderr, "listen_stream_fuzz: %s (note: %s)\n", what, note.c_str());
  std::abort();
}

// Header and whole records, the last one outside a heap dump: the framing read again here, apart
// from StreamFrame's.
bool whole_records(const Bytes& b) {
  if (b.empty()) return true;
  const void* nul = std::memchr(b.data(), 0, b.size());
  if (nul == nullptr) return false;
  size_t at = static_cast<size_t>(static_cast<const uint8_t*>(nul) - b.data()) + 1 + 12;
  bool in_dump = false;
  while (at < b.size()) {
    if (b.size() - at < 9) return false;
    const uint8_t tag = b[at];
    const uint64_t length = (uint64_t{b[at + 5]} << 24) | (uint64_t{b[at + 6]} << 16) | (uint64_t{b[at + 7]} << 8) | b[at + 8];
    at += 9;
    if (length > b.size() - at) return false;
    at += length;
    if (tag == 0x1c) in_dump = true;
    if (tag == 0x2c || tag == 0x0c) in_dump = false;
  }
  return at == b.size() && !in_dump;
}

// The plain bytes of concatenated gzip members, or false when they are not whole members.
bool gunzip(const Bytes& in, Bytes* out, size_t most) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return false;
  z.next_in = const_cast<uint8_t*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  uint8_t buffer[1 << 14];
  int rc = Z_STREAM_END;
  // Until the input is taken and the output drained: a call that fills the buffer may leave plain
  // bytes inside zlib after the last input byte is read.
  while (z.avail_in > 0) {
    z.next_out = buffer;
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out->insert(out->end(), buffer, buffer + (sizeof(buffer) - z.avail_out));
    if (out->size() > most) break;
    if (rc == Z_STREAM_END) {
      if (z.avail_in > 0) inflateReset(&z);
      continue;
    }
    if (rc != Z_OK) break;
  }
  while (rc == Z_OK && z.avail_out == 0 && out->size() <= most) {
    z.next_out = buffer;
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out->insert(out->end(), buffer, buffer + (sizeof(buffer) - z.avail_out));
  }
  const bool whole = z.avail_in == 0 && rc == Z_STREAM_END && out->size() <= most;
  inflateEnd(&z);
  return whole;
}

bool is_prefix(const Bytes& part, const uint8_t* whole, size_t size) {
  return part.empty() || (part.size() <= size && std::memcmp(part.data(), whole, part.size()) == 0);
}

Bytes file_bytes(int fd, uint64_t stored) {
  Bytes bytes(static_cast<size_t>(stored));
  if (pread(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) fail("short file", "");
  return bytes;
}

void check_gzip(const Bytes& stored, const uint8_t* stream, size_t size, const std::string& note) {
  Bytes plain, whole_plain;
  // What the stream itself holds, as far as zlib reads it (the bound keeps bombs in check).
  Bytes input(stream, stream + size);
  gunzip(input, &whole_plain, size_t{64} << 20);
  if (!gunzip(stored, &plain, size_t{64} << 20)) fail("the gzip file is not whole members", note);
  if (!is_prefix(plain, whole_plain.data(), whole_plain.size())) fail("the gzip file's plain bytes are not the stream's", note);
  const StreamFrame::Kind kind = StreamFrame::kind_of(plain.data(), plain.size());
  if (kind == StreamFrame::Kind::kBinary && !whole_records(plain)) fail("gzip: not whole records", note);
  if (kind == StreamFrame::Kind::kText && !plain.empty() && plain.back() != '\n') fail("gzip: not whole lines", note);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t* stream = data + 2;
  const size_t stream_size = size - 2;
  const uint64_t limit = data[1] == 0 ? 0 : uint64_t{data[1]} * (stream_size + 1) / 256;
  const int fd = memfd_create("listen-stream-fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return 0;
  if (limit > 0) {
    // Grows no further: a write past it fails (EPERM) as on a full disk; cuts may still shrink it.
    if (ftruncate(fd, static_cast<off_t>(limit)) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_GROW) != 0) fail("seal", "");
  }
  StreamFrame::Kind kind = StreamFrame::Kind::kUnknown;
  bool opened = false;
  StreamRecorder recorder([&](StreamFrame::Kind k) {
    if (opened) fail("the file was opened twice", "");
    opened = true;
    kind = k;
    return dup(fd);
  });
  size_t at = 0, step = data[0] % 61 + 1;
  bool failed = false;
  while (at < stream_size) {
    const size_t n = std::min(step, stream_size - at);
    if (!recorder.take(stream + at, n)) {
      if (failed || limit == 0) fail("a write failed without a limit, or twice", recorder.failure());
      failed = true;
    }
    at += n;
    step = (step * 7 + 3) % 4093 + 1;
  }
  const std::string note = recorder.finish();
  if (recorder.received() != stream_size) fail("received bytes miscounted", note);
  struct stat st{};
  fstat(fd, &st);
  const uint64_t stored = recorder.stored();
  if (static_cast<uint64_t>(st.st_size) != stored && !(limit > 0 && static_cast<uint64_t>(st.st_size) == limit && stored <= limit)) {
    fail("the file's size is not what the collector says", note);
  }
  const Bytes file = file_bytes(fd, stored);
  close(fd);
  const bool cut = note.rfind("cut back to ", 0) == 0;
  if (cut && std::strtoull(note.c_str() + 12, nullptr, 10) != stored) fail("the cut's size is wrong", note);
  if (!failed && limit == 0 && !cut && note.rfind("kept", 0) != 0 && stored != stream_size) fail("bytes lost", note);
  if (kind == StreamFrame::Kind::kGzip) {
    if (note.rfind("kept", 0) == 0) {
      if (!is_prefix(file, stream, stream_size)) fail("gzip kept: not the stream's bytes", note);
    } else {
      check_gzip(file, stream, stream_size, note);
    }
    return 0;
  }
  if (!is_prefix(file, stream, stream_size)) fail("the file is not the stream's bytes", note);
  if (kind == StreamFrame::Kind::kBinary && !whole_records(file)) fail("binary: not whole records", note);
  if (kind == StreamFrame::Kind::kText && !file.empty() && file.back() != '\n') fail("text: not whole lines", note);
  return 0;
}
