#include "sink/gzip_member.h"

#include <libdeflate.h>

#include <cstring>
#include <new>

namespace fasthprof {
namespace {

constexpr size_t kHeaderSize = 10;
constexpr size_t kTrailerSize = 8;
constexpr uint8_t kFlagComment = 0x10;
constexpr uint8_t kOsUnix = 3;

void put_u32_le(uint8_t* at, uint32_t value) {
  at[0] = static_cast<uint8_t>(value);
  at[1] = static_cast<uint8_t>(value >> 8);
  at[2] = static_cast<uint8_t>(value >> 16);
  at[3] = static_cast<uint8_t>(value >> 24);
}

}  // namespace

std::unique_ptr<GzipMemberEncoder> GzipMemberEncoder::create(int level, std::string* error) {
  libdeflate_compressor* compressor = libdeflate_alloc_compressor(level);
  if (compressor == nullptr) {
    if (error != nullptr) *error = "cannot set up gzip compression at level " + std::to_string(level);
    return nullptr;
  }
  std::unique_ptr<GzipMemberEncoder> encoder(new (std::nothrow) GzipMemberEncoder(compressor, level));
  if (encoder == nullptr) {
    libdeflate_free_compressor(compressor);
    if (error != nullptr) *error = "out of memory for gzip compression";
  }
  return encoder;
}

GzipMemberEncoder::~GzipMemberEncoder() {
  libdeflate_free_compressor(static_cast<libdeflate_compressor*>(compressor_));
}

size_t GzipMemberEncoder::bound(size_t block_size) const {
  return kHeaderSize + sizeof kGzipBlockComment + kTrailerSize +
         libdeflate_deflate_compress_bound(static_cast<libdeflate_compressor*>(compressor_), block_size);
}

size_t GzipMemberEncoder::encode(const uint8_t* data, size_t size, bool with_comment, uint8_t* out) const {
  uint8_t* at = out;
  // ID1 ID2, CM = deflate, FLG, MTIME = 0 (none, as the JDK writes), XFL (2: slowest, 4: fastest
  // algorithm), OS.
  at[0] = 0x1f;
  at[1] = 0x8b;
  at[2] = 8;
  at[3] = with_comment ? kFlagComment : 0;
  put_u32_le(at + 4, 0);
  at[8] = level_ <= 1 ? 4 : (level_ >= 9 ? 2 : 0);
  at[9] = kOsUnix;
  at += kHeaderSize;
  if (with_comment) {
    std::memcpy(at, kGzipBlockComment, sizeof kGzipBlockComment);  // with its NUL
    at += sizeof kGzipBlockComment;
  }
  // The bound leaves room for the worst case, so this cannot fail for lack of space.
  const size_t deflated = libdeflate_deflate_compress(static_cast<libdeflate_compressor*>(compressor_), data,
                                                      size, at, bound(size) - (at - out) - kTrailerSize);
  at += deflated;
  put_u32_le(at, libdeflate_crc32(0, data, size));
  put_u32_le(at + 4, static_cast<uint32_t>(size));
  at += kTrailerSize;
  return static_cast<size_t>(at - out);
}

}  // namespace fasthprof
