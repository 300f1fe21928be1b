#include "sink/gzip_backend.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "base/memory.h"

namespace fasthprof {

GzipBackend::GzipBackend(std::unique_ptr<SinkBackend> inner, std::unique_ptr<GzipMemberEncoder> encoder)
    : inner_(std::move(inner)), encoder_(std::move(encoder)) {}

std::unique_ptr<GzipBackend> GzipBackend::create(std::unique_ptr<SinkBackend> inner, int level,
                                                 std::string* error) {
  auto fail = [&](const std::string& message) {
    if (error != nullptr) *error = message;
    if (inner != nullptr) inner->close();
    return std::unique_ptr<GzipBackend>();
  };
  if (inner == nullptr) return fail("no output backend");
  std::unique_ptr<GzipMemberEncoder> encoder = GzipMemberEncoder::create(level, error);
  if (encoder == nullptr) return fail(error != nullptr ? *error : "cannot set up gzip compression");
  std::unique_ptr<GzipBackend> backend(new (std::nothrow) GzipBackend(nullptr, nullptr));
  if (backend == nullptr) return fail("out of memory for gzip compression");
  backend->member_capacity_ = encoder->bound(kGzipBlockSize);
  backend->block_ = static_cast<uint8_t*>(memory::allocate(kGzipBlockSize));
  backend->member_ = static_cast<uint8_t*>(memory::allocate(backend->member_capacity_));
  if (backend->block_ == nullptr || backend->member_ == nullptr) {
    return fail("out of memory for gzip compression buffers");
  }
  backend->encoder_ = std::move(encoder);
  backend->sealed_stored_offset_ = inner->offset();
  backend->inner_ = std::move(inner);
  return backend;
}

GzipBackend::~GzipBackend() {
  if (inner_ != nullptr) close();
  if (block_ != nullptr) memory::deallocate(block_, kGzipBlockSize);
  if (member_ != nullptr) memory::deallocate(member_, member_capacity_);
}

WriteResult GzipBackend::write_member() {
  // The first member of the output carries the block size for readers that index members.
  const bool first = offset_ == block_used_;
  const size_t length = encoder_->encode(block_, block_used_, first, member_);
  block_used_ = 0;
  const WriteResult result = inner_->write_all(member_, length);
  if (result.ok()) ++members_;
  return result;
}

WriteResult GzipBackend::write_all(const void* data, size_t size) {
  if (closed_) return {EBADF};
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const size_t taken = std::min(size, kGzipBlockSize - block_used_);
    std::memcpy(block_ + block_used_, bytes, taken);
    block_used_ += taken;
    offset_ += taken;
    bytes += taken;
    size -= taken;
    if (block_used_ == kGzipBlockSize) {
      const WriteResult result = write_member();
      if (!result.ok()) return result;
    }
  }
  return {};
}

WriteResult GzipBackend::seal() {
  if (closed_) return {EBADF};
  if (block_used_ > 0) {
    const WriteResult result = write_member();
    if (!result.ok()) return result;
  }
  sealed_offset_ = offset_;
  sealed_stored_offset_ = inner_->offset();
  return {};
}

WriteResult GzipBackend::truncate_to(uint64_t offset) {
  if (closed_ || !inner_->can_truncate()) return {EINVAL};
  if (offset == offset_ && block_used_ == 0) return {};
  if (offset != sealed_offset_) return {EINVAL};
  const WriteResult result = inner_->truncate_to(sealed_stored_offset_);
  if (!result.ok()) return result;
  block_used_ = 0;
  offset_ = offset;
  return {};
}

WriteResult GzipBackend::close() {
  if (closed_) return {};
  WriteResult result = block_used_ > 0 ? seal() : WriteResult{};
  closed_ = true;
  const WriteResult closed = inner_->close();
  return result.ok() ? closed : result;
}

}  // namespace fasthprof
