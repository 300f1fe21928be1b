// What `fasthprof listen` knows of one connection's bytes as they come: the kind of stream (binary
// HPROF, text, gzip), and the byte offset up to which it is whole, where a file can be cut back to
// when the stream stops in the middle of a record. A gzip stream (gz=y) is decompressed as it comes
// by a GzipFollower, only to follow the records inside it; its file keeps the bytes as they came.
//
// Limits (a peer may send anything): a gzip stream inside a gzip stream is not followed (an agent
// never writes one; the file is then kept as it came), at most kMaxPendingMembers gzip member ends
// are remembered past the last complete record, and a cut-back rewrites at most kMaxRewrite plain
// bytes. Memory is a few hundred bytes per StreamFrame plus zlib's inflate state (about 40 KiB)
// for a gzip one, whatever the stream.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fasthprof::cli {

class GzipFollower;

// The byte offset after which the stream is not yet whole: the end of the last complete record
// outside a heap dump (binary), or of the last whole line (text). A gzip stream is handed to a
// GzipFollower, which follows the records of the bytes it decompresses. Not thread-safe.
class StreamFrame {
 public:
  enum class Kind { kUnknown, kBinary, kText, kGzip, kOther };

  // follow_gzip false: a stream that starts with the gzip magic is kOther (the plain bytes of a
  // gzip stream: gzip inside gzip is not followed).
  explicit StreamFrame(bool follow_gzip = true);
  ~StreamFrame();
  StreamFrame(StreamFrame&&) = delete;

  // The kind the first bytes of a stream name (kUnknown while they do not yet tell), by the same
  // rule feed() follows. Allocates nothing.
  static Kind kind_of(const uint8_t* head, size_t size);

  // Follows size more bytes. Record bodies (nearly every byte of a dump) are skipped whole, lines
  // found by memrchr: the collector's one thread keeps up with many agents.
  void feed(const uint8_t* data, size_t size);
  uint64_t safe_end() const { return safe_; }
  uint64_t total() const { return offset_; }
  Kind kind() const { return kind_; }
  // The gzip follower of a kGzip stream (null before its first byte).
  GzipFollower* gzip() const { return gzip_.get(); }
  // Frees the gzip follower's inflate state: for a stream that has ended.
  void release_gzip() { gzip_.reset(); }

 private:
  void step(uint8_t byte);
  void classify(uint8_t byte);
  void record_header(const uint8_t* header);
  void end_record();
  void feed_gzip(const uint8_t* data, size_t size);

  enum class State { kHeaderTail, kRecordHeader, kBody };
  std::unique_ptr<GzipFollower> gzip_;
  Kind kind_ = Kind::kUnknown;
  State state_ = State::kHeaderTail;
  bool follow_gzip_;
  std::string head_;
  uint8_t record_[9] = {};
  uint64_t offset_ = 0, safe_ = 0, body_left_ = 0;
  uint32_t need_ = 0;
  uint8_t tag_ = 0;
  bool in_dump_ = false;
};

// gz=y: the agent writes gzip members of 1 MiB of plain bytes each (jcmd's layout), whose ends
// fall anywhere in the records, and ends a member at the end of every report. The follower
// inflates the members as they come, feeds the plain bytes to a StreamFrame of its own (which does
// not follow gzip again), and remembers where members ended (compressed and plain offsets): the
// last one at or before the plain safe point, those after it, and the last one that ended on a
// complete record. When the stream stops inside a record, cut_back() ends the file at the last
// member end at or before the plain safe point and appends one new member with the plain bytes
// from there to the safe point, read back from the file: a valid gzip file holding only complete
// records. Not thread-safe.
class GzipFollower {
 public:
  // Member ends remembered past the last complete record: 16 MiB, a heap dump of 1 TiB in the
  // agent's 1 MiB members. More, and the stream is kept as it comes.
  static constexpr size_t kMaxPendingMembers = size_t{1} << 20;
  // Plain bytes a cut-back compresses again (the agent's members hold 1 MiB); more, and the file
  // ends at the last member that ended on a complete record instead.
  static constexpr uint64_t kMaxRewrite = uint64_t{16} << 20;

  GzipFollower();
  ~GzipFollower();
  GzipFollower(const GzipFollower&) = delete;
  GzipFollower& operator=(const GzipFollower&) = delete;

  void feed(const uint8_t* data, size_t size);

  // nullptr, or why the stream is kept as it came (a stream zlib cannot read, gzip inside gzip,
  // too many members).
  const char* broken() const { return broken_; }
  uint64_t plain_safe() const { return inner_.safe_end(); }
  // The kind of the plain stream inside (kBinary or kText for an agent's).
  StreamFrame::Kind content_kind() const { return inner_.kind(); }
  // True when the compressed bytes end on a member end and the plain bytes on a complete record.
  bool whole() const;

  struct Cut {
    int64_t size = -1;   // the file's new size, -1 when it could not be cut
    uint64_t plain = 0;  // the plain bytes it holds
  };
  // Cuts the file (opened for reading and writing) back as the class comment says. When the last
  // records cannot be compressed again (more than kMaxRewrite bytes, a read or write error: a full
  // disk), the file ends at the last member that ended on a complete record, and *why says why.
  Cut cut_back(int file, std::string* why) const;

 private:
  struct Mark {
    uint64_t compressed, plain;
  };
  void member_ended(uint64_t compressed_end);
  int64_t rewrite_tail(int file, const Mark& mark, uint64_t safe, std::string* why) const;

  z_stream z_{};
  const char* broken_ = nullptr;
  StreamFrame inner_{/*follow_gzip=*/false};
  // marks_[0] is the last member end at or before the plain safe point, the rest come after it.
  std::vector<Mark> marks_{{0, 0}};
  Mark clean_{0, 0};  // the last member end on a complete record
  uint64_t compressed_ = 0;
};

}  // namespace fasthprof::cli
