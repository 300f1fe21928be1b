#include "stream_frame.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "base/byte_decoder.h"

namespace fasthprof::cli {
namespace {

constexpr std::string_view kHprofMagic = "JAVA PROFILE 1.0.";
constexpr size_t kLongestHead = 64;  // a stream that has not named its kind by then is kOther
constexpr uint8_t kHeapDumpSegment = 0x1c, kHeapDumpEnd = 0x2c, kHeapDump = 0x0c;

// The kind a stream's first bytes name, looking at the last of them (the earlier ones did not
// name it yet).
StreamFrame::Kind decide(std::string_view head, bool follow_gzip) {
  using Kind = StreamFrame::Kind;
  const uint8_t last = static_cast<uint8_t>(head.back());
  if (head.size() == 2 && static_cast<uint8_t>(head[0]) == 0x1f && last == 0x8b) {
    return follow_gzip ? Kind::kGzip : Kind::kOther;
  }
  const bool hprof = head.starts_with(kHprofMagic);
  if (last == 0 && hprof) return Kind::kBinary;
  if (last == '\n' && hprof) return Kind::kText;
  if (head.size() > kLongestHead) return Kind::kOther;
  return Kind::kUnknown;
}

bool write_all_at(int file, const std::vector<uint8_t>& bytes, uint64_t offset, std::string* why) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pwrite(file, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = n < 0 ? std::strerror(errno) : "nothing written";
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// The first `want` plain bytes of the gzip member at `offset` of the file.
bool read_member(int file, uint64_t offset, uint64_t want, std::vector<uint8_t>* out, std::string* why) {
  if (want == 0) return true;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    *why = "zlib cannot start";
    return false;
  }
  out->resize(want);
  z.next_out = out->data();
  z.avail_out = static_cast<uInt>(want);
  std::vector<uint8_t> in(1 << 16);
  int rc = Z_OK;
  while (z.avail_out > 0 && rc == Z_OK) {
    ssize_t n = pread(file, in.data(), in.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset += static_cast<uint64_t>(n);
    z.next_in = in.data();
    z.avail_in = static_cast<uInt>(n);
    while (z.avail_in > 0 && z.avail_out > 0 && rc == Z_OK) rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR) rc = Z_OK;
  }
  inflateEnd(&z);
  if (z.avail_out != 0) {
    *why = "cannot read back the last gzip member";
    return false;
  }
  return true;
}

bool gzip_member(const std::vector<uint8_t>& plain, std::vector<uint8_t>* out, std::string* why) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    *why = "zlib cannot start";
    return false;
  }
  out->resize(deflateBound(&z, static_cast<uLong>(plain.size())) + 32);
  z.next_in = const_cast<uint8_t*>(plain.data());
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = out->data();
  z.avail_out = static_cast<uInt>(out->size());
  int rc = deflate(&z, Z_FINISH);
  out->resize(out->size() - z.avail_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    *why = "cannot compress the last records";
    return false;
  }
  return true;
}

}  // namespace

StreamFrame::StreamFrame(bool follow_gzip) : follow_gzip_(follow_gzip) {}
StreamFrame::~StreamFrame() = default;

StreamFrame::Kind StreamFrame::kind_of(const uint8_t* head, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(head), size);
  for (size_t n = 1; n <= size; ++n) {
    Kind kind = decide(bytes.substr(0, n), /*follow_gzip=*/true);
    if (kind != Kind::kUnknown) return kind;
  }
  return Kind::kUnknown;
}

void StreamFrame::feed(const uint8_t* data, size_t size) {
  size_t i = 0;
  while (i < size) {
    if (kind_ == Kind::kBinary && state_ == State::kRecordHeader && need_ == 9 && size - i >= 9) {
      record_header(data + i);  // whole: a stream of empty records costs a step per record, not per byte
      i += 9;
      continue;
    }
    if (kind_ == Kind::kBinary && state_ == State::kBody && body_left_ > 1) {
      size_t run = static_cast<size_t>(std::min<uint64_t>(body_left_ - 1, size - i));
      body_left_ -= run;
      offset_ += run;
      i += run;
      continue;
    }
    if (kind_ == Kind::kText) {
      const void* last = memrchr(data + i, '\n', size - i);
      if (last != nullptr) safe_ = offset_ + (static_cast<const uint8_t*>(last) - (data + i)) + 1;
      offset_ += size - i;
      return;
    }
    if (kind_ == Kind::kGzip) {
      feed_gzip(data + i, size - i);
      offset_ += size - i;
      return;
    }
    if (kind_ == Kind::kOther) {
      offset_ += size - i;
      return;
    }
    step(data[i++]);
  }
}

void StreamFrame::classify(uint8_t byte) {
  head_.push_back(static_cast<char>(byte));
  kind_ = decide(head_, follow_gzip_);
  if (kind_ == Kind::kGzip) {
    feed_gzip(reinterpret_cast<const uint8_t*>(head_.data()), head_.size());
  } else if (kind_ == Kind::kBinary) {
    need_ = 12;  // id size, time
    state_ = State::kHeaderTail;
  } else if (kind_ == Kind::kText) {
    safe_ = offset_;
  }
  if (kind_ != Kind::kUnknown) std::string().swap(head_);
}

void StreamFrame::step(uint8_t byte) {
  ++offset_;
  if (kind_ == Kind::kUnknown) {
    classify(byte);
    return;
  }
  switch (state_) {
    case State::kHeaderTail:
      if (--need_ == 0) {
        safe_ = offset_;
        state_ = State::kRecordHeader;
        need_ = 9;
      }
      break;
    case State::kRecordHeader:
      record_[9 - need_] = byte;
      if (--need_ == 0) {
        offset_ -= 9;
        record_header(record_);
      }
      break;
    case State::kBody:
      if (--body_left_ == 0) end_record();
      break;
  }
}

// A record's 9-byte header (u1 tag, u4 time, u4 length), need_ == 9 before it.
void StreamFrame::record_header(const uint8_t* header) {
  offset_ += 9;
  tag_ = header[0];
  const uint64_t length = load_be32(header + 5);
  need_ = 9;
  if (length == 0) {
    end_record();
  } else {
    body_left_ = length;
    state_ = State::kBody;
  }
}

void StreamFrame::end_record() {
  if (tag_ == kHeapDumpSegment) in_dump_ = true;
  if (tag_ == kHeapDumpEnd || tag_ == kHeapDump) in_dump_ = false;
  if (!in_dump_) safe_ = offset_;
  state_ = State::kRecordHeader;
  need_ = 9;
}

void StreamFrame::feed_gzip(const uint8_t* data, size_t size) {
  if (!gzip_) gzip_ = std::make_unique<GzipFollower>();
  gzip_->feed(data, size);
}

GzipFollower::GzipFollower() {
  // 16 + 15: a gzip wrapper, the largest window.
  if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) broken_ = "zlib cannot start";
}

GzipFollower::~GzipFollower() { inflateEnd(&z_); }

bool GzipFollower::whole() const {
  return inner_.safe_end() == inner_.total() && marks_.back().compressed == compressed_;
}

void GzipFollower::feed(const uint8_t* data, size_t size) {
  if (broken_ != nullptr) {
    compressed_ += size;
    return;
  }
  static std::vector<uint8_t> plain(1 << 18);
  z_.next_in = const_cast<uint8_t*>(data);
  z_.avail_in = static_cast<uInt>(size);
  while (broken_ == nullptr) {
    z_.next_out = plain.data();
    z_.avail_out = static_cast<uInt>(plain.size());
    int rc = inflate(&z_, Z_NO_FLUSH);
    size_t produced = plain.size() - z_.avail_out;
    if (produced > 0) inner_.feed(plain.data(), produced);
    if (inner_.kind() == StreamFrame::Kind::kOther) {
      broken_ = "its content is not an HPROF stream (gzip inside gzip is not followed)";
      break;
    }
    if (rc == Z_STREAM_END) {
      member_ended(compressed_ + (size - z_.avail_in));
      inflateReset(&z_);
      if (z_.avail_in == 0) break;
      continue;
    }
    if (rc == Z_BUF_ERROR || (rc == Z_OK && z_.avail_in == 0 && z_.avail_out != 0)) break;  // wants more input
    if (rc != Z_OK) broken_ = "not a gzip stream zlib can read";
  }
  compressed_ += size;
}

void GzipFollower::member_ended(uint64_t compressed_end) {
  const Mark mark{compressed_end, inner_.total()};
  if (inner_.safe_end() == mark.plain) clean_ = mark;
  // Marks before the last one at or before the safe point are never cut to again.
  size_t keep_from = 0;
  while (keep_from + 1 < marks_.size() && marks_[keep_from + 1].plain <= inner_.safe_end()) ++keep_from;
  marks_.erase(marks_.begin(), marks_.begin() + static_cast<long>(keep_from));
  if (marks_.back().plain == mark.plain) {
    marks_.back() = mark;  // an empty member: the later end serves as well
  } else if (marks_.size() > kMaxPendingMembers) {
    broken_ = "more gzip members inside one record than the collector remembers";
  } else {
    marks_.push_back(mark);
  }
}

GzipFollower::Cut GzipFollower::cut_back(int file, std::string* why) const {
  const uint64_t safe = inner_.safe_end();
  Mark mark = marks_.front();
  for (const Mark& m : marks_) {
    if (m.plain <= safe) mark = m;
  }
  if (clean_.plain == safe) mark = clean_;
  if (safe - mark.plain > kMaxRewrite) {
    *why = "more than " + std::to_string(kMaxRewrite >> 20) + " MiB of records to compress again";
  } else {
    int64_t size = rewrite_tail(file, mark, safe, why);
    if (size >= 0) return {size, safe};
  }
  // The last records could not be written again: end on the last member that ended on a record.
  if (ftruncate(file, static_cast<off_t>(clean_.compressed)) != 0) {
    *why += std::string("; cannot truncate: ") + std::strerror(errno);
    return {};
  }
  return {static_cast<int64_t>(clean_.compressed), clean_.plain};
}

// Ends the file at mark plus one new member with the plain bytes from mark to safe; the new size,
// or -1 with *why.
int64_t GzipFollower::rewrite_tail(int file, const Mark& mark, uint64_t safe, std::string* why) const {
  std::vector<uint8_t> plain;
  if (!read_member(file, mark.compressed, safe - mark.plain, &plain, why)) return -1;
  std::vector<uint8_t> member;
  if (!plain.empty() && !gzip_member(plain, &member, why)) return -1;
  if (ftruncate(file, static_cast<off_t>(mark.compressed)) != 0) {
    *why = std::strerror(errno);
    return -1;
  }
  if (!write_all_at(file, member, mark.compressed, why)) return -1;
  return static_cast<int64_t>(mark.compressed + member.size());
}

}  // namespace fasthprof::cli
