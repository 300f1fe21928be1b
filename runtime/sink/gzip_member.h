// Gzip members of whole blocks, in the layout the JDK writes for `jcmd GC.heap_dump -gz=N`: the
// output is cut into blocks of at most kGzipBlockSize uncompressed bytes, each compressed on its
// own into one gzip member (RFC 1952), and the file's first member carries the header comment
// "HPROF BLOCKSIZE=1048576". Concatenated members are one valid gzip file (gzip -d, zcat); readers
// that know the comment (the OpenJDK test library, Eclipse MAT) index the members and decompress
// only the block they need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fasthprof {

inline constexpr size_t kGzipBlockSize = size_t{1} << 20;
// The first member's header comment, without its NUL.
inline constexpr char kGzipBlockComment[] = "HPROF BLOCKSIZE=1048576";
// The level gz=y compresses at (docs/decisions.md, "Compressed output", has the figures).
inline constexpr int kGzipLevel = 1;

// Compresses blocks into members with libdeflate (docs/decisions.md, "Compressed output", says
// why libdeflate and which level). Owns the library's compressor state, allocated once by create();
// encode() never allocates. One thread at a time.
class GzipMemberEncoder {
 public:
  // level: 1 (fastest) .. 9. Returns null with *error set when the compressor cannot be had.
  static std::unique_ptr<GzipMemberEncoder> create(int level, std::string* error);
  ~GzipMemberEncoder();

  GzipMemberEncoder(const GzipMemberEncoder&) = delete;
  GzipMemberEncoder& operator=(const GzipMemberEncoder&) = delete;

  // Bytes out must have room for: one member of a block of block_size bytes, comment included.
  size_t bound(size_t block_size) const;

  // Writes one whole member (header, deflate data, CRC-32 and size) of size bytes of data into
  // out, whose capacity is at least bound(size); with_comment adds kGzipBlockComment to its
  // header. Returns the member's length.
  size_t encode(const uint8_t* data, size_t size, bool with_comment, uint8_t* out) const;

  int level() const { return level_; }

 private:
  GzipMemberEncoder(void* compressor, int level) : compressor_(compressor), level_(level) {}

  void* compressor_;  // struct libdeflate_compressor*
  int level_;
};

}  // namespace fasthprof
