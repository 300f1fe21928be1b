// A SinkBackend that gzips what it is given on the way to another backend, in the JDK's layout of
// compressed heap dumps (gzip_member.h): blocks of 1 MiB of uncompressed bytes, one gzip member
// each. The sink's io thread drives it, so compression never runs on the producer.
//
// A member ends at every seal() (the sink seals at the end of each report), so that the output is
// a complete gzip file after every report, whether it is a file that users copy while the JVM
// runs or a socket. The member that ends a report is then shorter than a block; the JDK's own
// dumps have such members too (its members hold up to 1 MiB), and readers that index members take
// any length up to the block size. A sealed member is never rewritten: a socket could not rewind,
// and a file keeps one layout whatever its destination.
//
// offset() and truncate_to() count uncompressed bytes, which is what the sink remembers report
// starts in; truncate_to() cuts the inner backend back to the member boundary the last seal() left,
// which is where the sink's reports start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sink/gzip_member.h"
#include "sink/sink_backend.h"

namespace fasthprof {

class GzipBackend final : public SinkBackend {
 public:
  // Wraps inner, compressing at level (1..9). Allocates the block and member buffers and the
  // compressor here, once. Returns null with *error set when they cannot be had (inner is then
  // closed). Any thread; the backend then belongs to its user.
  static std::unique_ptr<GzipBackend> create(std::unique_ptr<SinkBackend> inner, int level,
                                             std::string* error);
  ~GzipBackend() override;

  GzipBackend(const GzipBackend&) = delete;
  GzipBackend& operator=(const GzipBackend&) = delete;

  // Takes size bytes into the block; each block that fills is written as one member. Does not
  // allocate. On failure returns the inner backend's errno; the block being written is dropped.
  WriteResult write_all(const void* data, size_t size) override;
  // Uncompressed bytes taken so far (since the start, or the last truncate_to()).
  uint64_t offset() const override { return offset_; }
  bool can_truncate() const override { return inner_->can_truncate(); }
  // Accepts the offset of the last seal() (or offset() itself while no bytes wait in the block):
  // other offsets lie inside a member and give EINVAL.
  WriteResult truncate_to(uint64_t offset) override;
  bool error_ends_output() const override { return inner_->error_ends_output(); }
  const std::string& name() const override { return inner_->name(); }
  std::string describe_error(int error) const override { return inner_->describe_error(error); }
  // Writes the bytes waiting in the block as a member and remembers the boundary as the point
  // truncate_to() cuts back to. Does nothing to the output when the block is empty.
  WriteResult seal() override;
  // The inner backend's offset: compressed bytes.
  uint64_t stored_offset() const override { return inner_->offset(); }
  // Seals, then closes the inner backend; the first error wins.
  WriteResult close() override;

  // Members written so far (for tests and diagnostics).
  uint64_t members() const { return members_; }

 private:
  GzipBackend(std::unique_ptr<SinkBackend> inner, std::unique_ptr<GzipMemberEncoder> encoder);
  WriteResult write_member();

  std::unique_ptr<SinkBackend> inner_;
  std::unique_ptr<GzipMemberEncoder> encoder_;
  uint8_t* block_ = nullptr;   // kGzipBlockSize bytes
  size_t block_used_ = 0;
  uint8_t* member_ = nullptr;  // member_capacity_ bytes
  size_t member_capacity_ = 0;
  uint64_t offset_ = 0;
  uint64_t members_ = 0;
  // The boundary the last seal() left: uncompressed offset and the inner backend's offset.
  uint64_t sealed_offset_ = 0;
  uint64_t sealed_stored_offset_ = 0;
  bool closed_ = false;
};

}  // namespace fasthprof
