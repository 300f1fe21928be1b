// gz=y below the sink: members of 1 MiB blocks with the JDK's header comment on the first, a member
// ended at every seal (report ends), cutting back to the last seal after a write error, and the
// sink driving it all from its io thread. Every output is decoded here with zlib (member by member,
// headers and trailers checked) and with hprof/'s reader, never with the writer's libdeflate.
#include "hprof_input.h"
#include "memory_backend.h"
#include "sink/async_sink.h"
#include "sink/file_backend.h"
#include "sink/gzip_backend.h"
#include "sink/gzip_member.h"

#include <errno.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fasthprof {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr size_t kBlock = kGzipBlockSize;

using MemoryState = MemoryBackendState;

// Bytes that compress, like records: a few repeated words with a counter.
Bytes records(size_t size, uint32_t seed) {
  Bytes bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>((i % 64 < 8) ? (i / 64 + seed) : 'a' + i % 7);
  return bytes;
}

Bytes concat(std::initializer_list<const Bytes*> parts) {
  Bytes all;
  for (const Bytes* part : parts) all.insert(all.end(), part->begin(), part->end());
  return all;
}

uint32_t le32(const uint8_t* at) {
  return uint32_t{at[0]} | uint32_t{at[1]} << 8 | uint32_t{at[2]} << 16 | uint32_t{at[3]} << 24;
}

struct Member {
  std::string comment;  // "" when the header has none
  bool has_comment = false;
  Bytes data;
  uint8_t xfl = 0, os = 0;
};

// Splits gzip bytes into members, decoding each with zlib's raw inflate and checking its header,
// CRC-32 and size. Fails the test on anything malformed.
std::vector<Member> members_of(const Bytes& gz) {
  std::vector<Member> members;
  size_t at = 0;
  while (at < gz.size()) {
    Member member;
    EXPECT_GE(gz.size() - at, 18u);
    if (gz.size() - at < 18) return members;
    EXPECT_EQ(gz[at], 0x1f);
    EXPECT_EQ(gz[at + 1], 0x8b);
    EXPECT_EQ(gz[at + 2], 8);
    const uint8_t flags = gz[at + 3];
    EXPECT_EQ(flags & ~0x10, 0) << "only FCOMMENT may be set";
    EXPECT_EQ(le32(&gz[at + 4]), 0u) << "no MTIME";
    member.xfl = gz[at + 8];
    member.os = gz[at + 9];
    size_t p = at + 10;
    if (flags & 0x10) {
      member.has_comment = true;
      while (p < gz.size() && gz[p] != 0) member.comment.push_back(static_cast<char>(gz[p++]));
      ++p;
    }
    z_stream stream{};
    EXPECT_EQ(inflateInit2(&stream, -MAX_WBITS), Z_OK);
    member.data.resize(2 * kBlock);
    stream.next_in = const_cast<uint8_t*>(&gz[p]);
    stream.avail_in = static_cast<uInt>(gz.size() - p);
    stream.next_out = member.data.data();
    stream.avail_out = static_cast<uInt>(member.data.size());
    EXPECT_EQ(inflate(&stream, Z_FINISH), Z_STREAM_END) << "member " << members.size();
    member.data.resize(stream.total_out);
    p += stream.total_in;
    inflateEnd(&stream);
    EXPECT_LE(p + 8, gz.size());
    if (p + 8 > gz.size()) return members;
    EXPECT_EQ(le32(&gz[p]), static_cast<uint32_t>(crc32(0, member.data.data(), static_cast<uInt>(member.data.size()))));
    EXPECT_EQ(le32(&gz[p + 4]), member.data.size());
    at = p + 8;
    members.push_back(std::move(member));
  }
  return members;
}

Bytes inflate_all(const Bytes& gz) {
  HprofInput input;
  std::string error;
  EXPECT_TRUE(input.inflate(gz.data(), gz.size(), &error)) << error;
  return Bytes(input.data(), input.data() + input.size());
}

std::unique_ptr<GzipBackend> make_gzip(MemoryState* state) {
  std::string error;
  auto backend = GzipBackend::create(std::make_unique<MemoryBackend>(state), kGzipLevel, &error);
  EXPECT_NE(backend, nullptr) << error;
  return backend;
}

void write(SinkBackend* backend, const Bytes& bytes, size_t chunk) {
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    ASSERT_TRUE(backend->write_all(bytes.data() + i, std::min(chunk, bytes.size() - i)).ok());
  }
}

TEST(GzipBackend, CutsTheOutputIntoOneMemberPerMebibyteWithTheCommentOnTheFirst) {
  MemoryState state;
  auto gz = make_gzip(&state);
  const Bytes part1 = records(kBlock + 100, 1), part2 = noise_bytes(kBlock + 7, 2);
  const Bytes input = concat({&part1, &part2});
  write(gz.get(), input, 4093);
  // Two whole blocks are out; the rest waits for the seal.
  EXPECT_EQ(gz->members(), 2u);
  EXPECT_EQ(gz->offset(), input.size());
  ASSERT_TRUE(gz->seal().ok());
  const std::vector<Member> members = members_of(state.data);
  ASSERT_EQ(members.size(), 3u);
  EXPECT_TRUE(members[0].has_comment);
  EXPECT_EQ(members[0].comment, "HPROF BLOCKSIZE=1048576");
  EXPECT_FALSE(members[1].has_comment);
  EXPECT_FALSE(members[2].has_comment);
  EXPECT_EQ(members[0].data.size(), kBlock);
  EXPECT_EQ(members[1].data.size(), kBlock);
  EXPECT_EQ(members[2].data.size(), input.size() - 2 * kBlock);
  EXPECT_EQ(members[0].xfl, 4) << "level 1 is the fastest algorithm";
  EXPECT_EQ(members[0].os, 3);
  EXPECT_EQ(inflate_all(state.data), input);
  EXPECT_EQ(gz->stored_offset(), state.data.size());
}

TEST(GzipBackend, EachSealEndsAMemberSoTheOutputIsCompleteAfterEveryReport) {
  MemoryState state;
  auto gz = make_gzip(&state);
  const Bytes r1 = records(1000, 1), r2 = records(300000, 2), r3 = noise_bytes(5, 3);
  Bytes expected;
  size_t count = 0;
  for (const Bytes* report : {&r1, &r2, &r3}) {
    write(gz.get(), *report, 777);
    EXPECT_EQ(gz->members(), count) << "nothing is written before the seal";
    ASSERT_TRUE(gz->seal().ok());
    ++count;
    expected.insert(expected.end(), report->begin(), report->end());
    EXPECT_EQ(inflate_all(state.data), expected) << "complete gzip after report " << count;
  }
  const size_t before = state.data.size();
  ASSERT_TRUE(gz->seal().ok());
  EXPECT_EQ(state.data.size(), before) << "an empty block makes no member";
  const std::vector<Member> members = members_of(state.data);
  ASSERT_EQ(members.size(), 3u);
  EXPECT_TRUE(members[0].has_comment);
  EXPECT_FALSE(members[1].has_comment);
  EXPECT_EQ(members[1].data, r2);
}

TEST(GzipBackend, TruncatesBackToTheLastSealAndOnlyThere) {
  MemoryState state;
  auto gz = make_gzip(&state);
  const Bytes r1 = records(400000, 1), r2 = records(3 * kBlock, 2), r3 = records(1000, 3);
  write(gz.get(), r1, 65536);
  ASSERT_TRUE(gz->seal().ok());
  const size_t sealed_stored = state.data.size();
  write(gz.get(), r2, 65536);  // two whole members reach the inner backend, the rest waits
  EXPECT_GT(state.data.size(), sealed_stored);
  EXPECT_EQ(gz->truncate_to(r1.size() + 1).error, EINVAL);
  EXPECT_EQ(gz->truncate_to(0).error, EINVAL);
  ASSERT_TRUE(gz->truncate_to(r1.size()).ok());
  EXPECT_EQ(state.data.size(), sealed_stored);
  EXPECT_EQ(gz->offset(), r1.size());
  write(gz.get(), r3, 100);
  ASSERT_TRUE(gz->seal().ok());
  EXPECT_EQ(inflate_all(state.data), concat({&r1, &r3}));
  // Nothing waiting and the offset asked is the current one: nothing to do.
  EXPECT_TRUE(gz->truncate_to(gz->offset()).ok());
}

TEST(GzipBackend, CutBackToTheStartPutsTheCommentOnTheNextFirstMember) {
  MemoryState state;
  auto gz = make_gzip(&state);
  ASSERT_TRUE(gz->seal().ok());  // a report begins at 0
  write(gz.get(), records(2 * kBlock + 5, 1), 100000);
  ASSERT_TRUE(gz->truncate_to(0).ok());
  EXPECT_TRUE(state.data.empty());
  const Bytes r = records(5000, 2);
  write(gz.get(), r, 5000);
  ASSERT_TRUE(gz->seal().ok());
  const std::vector<Member> members = members_of(state.data);
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].comment, "HPROF BLOCKSIZE=1048576");
  EXPECT_EQ(members[0].data, r);
}

TEST(GzipBackend, WriteErrorsComeBackAndAnUntruncatableInnerCannotCutBack) {
  MemoryState state;
  state.quota = 1000;
  state.can_truncate = false;
  auto gz = make_gzip(&state);
  EXPECT_FALSE(gz->can_truncate());
  const Bytes big = noise_bytes(kBlock, 1);
  EXPECT_EQ(gz->write_all(big.data(), big.size()).error, ENOSPC) << "a whole block is written at once";
  EXPECT_EQ(gz->truncate_to(0).error, EINVAL);
  const Bytes small = noise_bytes(10, 2);
  ASSERT_TRUE(gz->write_all(small.data(), small.size()).ok());
  EXPECT_EQ(gz->seal().error, ENOSPC);
}

TEST(GzipBackend, CloseSealsWhatWaitsAndClosesTheInnerBackend) {
  MemoryState state;
  auto gz = make_gzip(&state);
  const Bytes r = records(12345, 1);
  write(gz.get(), r, 1000);
  EXPECT_TRUE(state.data.empty());
  ASSERT_TRUE(gz->close().ok());
  EXPECT_TRUE(state.closed);
  EXPECT_EQ(inflate_all(state.data), r);
  EXPECT_EQ(gz->write_all(r.data(), 1).error, EBADF);
  EXPECT_TRUE(gz->close().ok()) << "idempotent";
}

// Through the sink: the io thread compresses (the producer never does), reports end members, and a
// failed report is cut back to the last complete one in the compressed file.
TEST(GzipBackend, SinkSealsEveryReportOnItsIoThreadAndCutsBackAFailedOne) {
  MemoryState state;
  std::vector<std::string> messages;
  std::mutex messages_mutex;
  AsyncSinkOptions options;
  options.buffer_size = 64 * 1024;
  options.reporter = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(messages_mutex);
    messages.push_back(line);
  };
  std::string error;
  auto sink = AsyncSink::create(make_gzip(&state), options, &error);
  ASSERT_NE(sink, nullptr) << error;
  const Bytes r1 = records(1500000, 1), r2 = records(200000, 2), r3 = noise_bytes(3 * kBlock, 3),
              r4 = records(70000, 4);
  for (const Bytes* report : {&r1, &r2}) {
    sink->begin_report();
    for (size_t i = 0; i < report->size(); i += 1000) sink->write(report->data() + i, std::min<size_t>(1000, report->size() - i));
    ASSERT_TRUE(sink->end_report());
    EXPECT_EQ(inflate_all(state.data), report == &r1 ? r1 : concat({&r1, &r2}));
  }
  const size_t good = state.data.size();
  state.quota = good + kBlock / 2;  // the noise does not compress: the disk fills inside report 3
  sink->begin_report();
  sink->write(r3.data(), r3.size());
  EXPECT_FALSE(sink->end_report());
  EXPECT_EQ(state.data.size(), good);
  EXPECT_EQ(inflate_all(state.data), concat({&r1, &r2}));
  {
    std::lock_guard<std::mutex> lock(messages_mutex);
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_EQ(messages[0], "fasthprof: error writing memory: No space left on device; the file was truncated "
                           "to the last complete report (" + std::to_string(good) + " bytes)");
  }
  state.quota = SIZE_MAX;
  sink->begin_report();
  sink->write(r4.data(), r4.size());
  ASSERT_TRUE(sink->end_report());
  sink->close();
  EXPECT_EQ(inflate_all(state.data), concat({&r1, &r2, &r4}));
  const std::vector<Member> members = members_of(state.data);
  ASSERT_EQ(members.size(), 4u) << "r1: a block and its rest; r2; r4";
  EXPECT_EQ(members[0].data.size(), kBlock);
  for (std::thread::id writer : state.writers) EXPECT_NE(writer, std::this_thread::get_id());
}

TEST(GzipBackend, AFileWrittenThroughTheSinkIsOneGzipFileAfterEveryReport) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/fasthprof_gz_" + std::to_string(getpid());
  std::string error;
  auto file = FileBackend::open(path, &error);
  ASSERT_NE(file, nullptr) << error;
  auto gz = GzipBackend::create(std::move(file), kGzipLevel, &error);
  ASSERT_NE(gz, nullptr) << error;
  auto sink = AsyncSink::create(std::move(gz), AsyncSinkOptions{}, &error);
  ASSERT_NE(sink, nullptr) << error;
  Bytes expected;
  for (uint32_t i = 1; i <= 3; ++i) {
    const Bytes report = records(i * 700000, i);
    sink->begin_report();
    sink->write(report.data(), report.size());
    ASSERT_TRUE(sink->end_report());
    expected.insert(expected.end(), report.begin(), report.end());
    HprofInput input;
    ASSERT_TRUE(input.open(path.c_str(), &error)) << error;
    EXPECT_TRUE(input.compressed());
    EXPECT_EQ(Bytes(input.data(), input.data() + input.size()), expected);
  }
  sink->close();
  unlink(path.c_str());
}

// A gzip file is decompressed into a temporary file of no name in $TMPDIR, mapped; pages that
// release_before() and release_range() let go of read the same when they are read again.
TEST(HprofInput, ReleasedPagesReadTheSameAndNothingIsLeftInTmpdir) {
  char dir[] = "/tmp/fasthprof_input_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir != nullptr ? old_tmpdir : "";
  setenv("TMPDIR", dir, 1);
  const Bytes plain = records(40u << 20, 7);  // over a release step of 32 MiB
  MemoryState state;
  auto gz = make_gzip(&state);
  write(gz.get(), plain, kBlock);
  ASSERT_TRUE(gz->seal().ok());
  {
    HprofInput input;
    std::string error;
    ASSERT_TRUE(input.inflate(state.data.data(), state.data.size(), &error)) << error;
    ASSERT_EQ(input.size(), plain.size());
    std::ifstream maps("/proc/self/maps");
    const std::string mappings((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    EXPECT_NE(mappings.find(std::string(dir) + "/"), std::string::npos) << "the bytes are a file in TMPDIR";
    input.release_before(36u << 20);
    input.release_range(5, 6u << 20);
    EXPECT_EQ(std::memcmp(input.data(), plain.data(), plain.size()), 0);
  }
  EXPECT_EQ(rmdir(dir), 0) << "TMPDIR is empty once the input is gone: " << std::strerror(errno);
  if (old_tmpdir != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
}

TEST(HprofInput, ReportsATruncatedOrCorruptGzipFile) {
  MemoryState state;
  auto gz = make_gzip(&state);
  write(gz.get(), records(300000, 1), 300000);
  ASSERT_TRUE(gz->seal().ok());
  write(gz.get(), records(300000, 2), 300000);
  ASSERT_TRUE(gz->seal().ok());
  HprofInput input;
  std::string error;
  Bytes cut(state.data.begin(), state.data.end() - 5);
  EXPECT_FALSE(input.inflate(cut.data(), cut.size(), &error));
  EXPECT_EQ(error, "gzip: the file ends inside member 2 (truncated)");
  Bytes bad = state.data;
  bad[bad.size() - 1] ^= 1;  // the second member's size
  EXPECT_FALSE(input.inflate(bad.data(), bad.size(), &error));
  EXPECT_NE(error.find("member 2"), std::string::npos) << error;
  Bytes trailing = state.data;
  trailing.push_back(0);
  EXPECT_FALSE(input.inflate(trailing.data(), trailing.size(), &error));
  EXPECT_NE(error.find("no gzip member starts"), std::string::npos) << error;
}

}  // namespace
}  // namespace fasthprof
