// The side files of JDK 22+ (runtime/vm_dump/vm_dump_pipe.h, VmDumpRewriter::feed_file) on JDK-like dumps
// built byte by byte (jdk_dump_builder.h): the side file read in place of its copy in the pipe, its
// unchanged runs handed on as file ranges, the pipe's bytes used where the file is gone, differs or
// is not one the JVM made.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "jdk_dump_builder.h"
#include "vm_dump/vm_dump_pipe.h"

namespace fasthprof {
namespace {

using namespace jdk_dump;

// The sample dump with a third, large segment (byte arrays, and a patched root in their midst), as
// one stream; *segments is where its first HEAP DUMP SEGMENT starts and *end its HEAP DUMP END.
JdkDump large_dump(size_t* segments, size_t* end, size_t arrays = 30000) {
  Layout l{};
  JdkDump d = sample_dump(&l);
  d.data.resize(l.end);
  Segment big;
  for (size_t i = 0; i < arrays; ++i) {
    big.byte_array(0x700000000 + i * 0x40, std::string(16 + i % 7, static_cast<char>('a' + i % 26)));
    if (i == arrays / 2) big.frame_root(0x03, kString1, kMainThread, 0);  // thread serial: patched
  }
  d.segment(big);
  *segments = l.segment1;
  *end = d.end();
  return d;
}

std::vector<uint8_t> rewritten_in_memory(const JdkDump& dump) {
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  EXPECT_TRUE(rewrite(rewriter, dump.data)) << rewriter.error();
  return out.bytes;
}

// A MemoryStream that counts the file ranges it is given (and reads them, as the default does).
class RangeCountingStream final : public OutputStream {
 public:
  void write(const void* data, size_t size) override { stream.write(data, size); }
  bool write_file_range(int fd, uint64_t offset, uint64_t size) override {
    ++ranges;
    range_bytes += size;
    largest = std::max(largest, size);
    return stream.write_file_range(fd, offset, size);
  }
  MemoryStream stream;
  int ranges = 0;
  uint64_t range_bytes = 0;
  uint64_t largest = 0;
};

struct TempFolder {
  TempFolder() {
    const char* base = std::getenv("TMPDIR");
    path = std::string(base != nullptr ? base : "/tmp") + "/fasthprof_vmdump_" + std::to_string(::getpid());
    ::mkdir(path.c_str(), 0700);
  }
  ~TempFolder() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const uint8_t* data, size_t size) const {
    std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return file;
  }
  std::string path;
};

// Rewrites the dump with everything from `segments` to `end` read from a file.
RangeCountingStream rewrite_through_file(const JdkDump& dump, size_t segments, size_t end, VmDumpStats* stats) {
  TempFolder folder;
  std::string side = folder.write("side.p0", dump.data.data() + segments, end - segments);
  int fd = ::open(side.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  VmDumpNumbering numbering;
  RangeCountingStream out;
  VmDumpRewriter rewriter(numbering, out);
  std::vector<uint8_t> copy = dump.data;
  EXPECT_TRUE(rewriter.feed_in_place(copy.data(), segments)) << rewriter.error();
  EXPECT_TRUE(rewriter.feed_file(fd, end - segments)) << rewriter.error();
  EXPECT_TRUE(rewriter.feed(dump.data.data() + end, dump.size() - end)) << rewriter.error();
  EXPECT_TRUE(rewriter.finish()) << rewriter.error();
  ::close(fd);
  *stats = rewriter.stats();
  return out;
}

// A side file of 20 MB: its one unchanged run goes out in ranges of at most 8 MiB, so that the sink
// copies while the rewriter reads on.
TEST(VmDumpRewriterFile, LongRunsAreHandedOverInPieces) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end, 600000);
  VmDumpStats stats;
  RangeCountingStream out = rewrite_through_file(dump, segments, end, &stats);
  EXPECT_EQ(out.stream.bytes, rewritten_in_memory(dump));
  EXPECT_GE(out.ranges, 3);
  EXPECT_LE(out.largest, (uint64_t{8} << 20) + (uint64_t{1} << 20));
  EXPECT_GT(out.range_bytes, (end - segments) * 9 / 10);
  EXPECT_EQ(stats.file_ranges, static_cast<uint64_t>(out.ranges));
}

TEST(VmDumpRewriterFile, SideFileGivesTheSameBytesWithItsUnchangedRunsAsFileRanges) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  VmDumpStats stats;
  RangeCountingStream out = rewrite_through_file(dump, segments, end, &stats);
  EXPECT_EQ(out.stream.bytes, whole);
  // The big segment's arrays are copied as ranges (two: the patched root splits them); the small
  // segments' patched roots and the runs shorter than 128 KiB come from memory.
  EXPECT_EQ(out.ranges, 2);
  EXPECT_GT(out.range_bytes, 900000u);
  EXPECT_EQ(stats.file_ranges, 2u);
  EXPECT_EQ(stats.file_bytes, end - segments);
  EXPECT_EQ(stats.bytes_in, dump.size());
  std::vector<uint8_t> file = fasthprof_header();
  file.insert(file.end(), whole.begin(), whole.end());
  VerifyResult result = verify(file);
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  EXPECT_EQ(result.dumps[0].instances, 3u);
}

// Drives a VmDumpPipeReader as FifoDrain does: the stream in chunks of `chunk` bytes, bytes it asks
// to skip taken from the stream unseen.
struct PipeRun {
  std::vector<uint8_t> out;
  uint32_t side_files = 0;
  uint64_t skipped = 0;
  std::string note;
};
PipeRun run_pipe(const JdkDump& dump, const std::string& pipe_path, size_t chunk, bool side_files = true) {
  PipeRun run;
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  uint64_t skip = 0;
  {
    VmDumpPipeReader reader(rewriter, pipe_path, side_files, [&skip](uint64_t n) { skip += n; });
    std::vector<uint8_t> copy = dump.data;
    size_t at = 0;
    while (at < copy.size()) {
      if (skip > 0) {
        uint64_t n = std::min<uint64_t>(skip, copy.size() - at);
        at += n;
        skip -= n;
        run.skipped += n;
        continue;
      }
      size_t n = std::min(chunk, copy.size() - at);
      EXPECT_TRUE(reader.take(copy.data() + at, n)) << rewriter.error();
      at += n;
    }
    EXPECT_EQ(skip, 0u);
    run.side_files = reader.side_files();
    run.note = reader.note();
  }
  EXPECT_TRUE(rewriter.finish()) << rewriter.error();
  run.out = out.bytes;
  return run;
}

TEST(VmDumpPipeReader, ReadsTheSideFileInPlaceOfItsCopyInThePipe) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  TempFolder folder;
  const std::string pipe = folder.path + "/dump.fifo";
  folder.write("dump.fifo.p0", dump.data.data() + segments, end - segments);
  // Chunks that cut the first segment's header, that hold the whole side file, and pipe-sized ones.
  for (size_t chunk : {segments + 3, size_t{4096}, size_t{1} << 20, dump.size()}) {
    PipeRun run = run_pipe(dump, pipe, chunk);
    EXPECT_EQ(run.out, whole) << chunk;
    EXPECT_EQ(run.side_files, 1u) << chunk << ": " << run.note;
    EXPECT_GE(run.skipped, chunk >= end ? size_t{0} : end - segments - chunk) << chunk;
  }
  // Two side files, as parallel dumpers write: the second begins at the second segment.
  Layout l{};
  sample_dump(&l);
  folder.write("two.fifo.p0", dump.data.data() + segments, l.segment2 - l.segment1);
  folder.write("two.fifo.p1", dump.data.data() + segments + (l.segment2 - l.segment1), end - segments - (l.segment2 - l.segment1));
  PipeRun two = run_pipe(dump, folder.path + "/two.fifo", 4096);
  EXPECT_EQ(two.out, whole);
  EXPECT_EQ(two.side_files, 2u) << two.note;
}

TEST(VmDumpPipeReader, UsesThePipeWhenTheSideFileIsGoneOrDiffers) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  TempFolder folder;
  PipeRun gone = run_pipe(dump, folder.path + "/gone.fifo", 65536);
  EXPECT_EQ(gone.out, whole);
  EXPECT_EQ(gone.side_files, 0u);
  EXPECT_EQ(gone.skipped, 0u);
  EXPECT_NE(gone.note.find("no side file " + folder.path + "/gone.fifo.p0"), std::string::npos) << gone.note;
  std::vector<uint8_t> other(dump.data.begin() + segments, dump.data.begin() + end);
  other[20] ^= 1;  // within the first bytes the reader compares
  folder.write("other.fifo.p0", other.data(), other.size());
  PipeRun differs = run_pipe(dump, folder.path + "/other.fifo", 65536);
  EXPECT_EQ(differs.out, whole);
  EXPECT_EQ(differs.side_files, 0u);
  EXPECT_NE(differs.note.find("is not what the JVM sends"), std::string::npos) << differs.note;
  // JDK 17 has no side file and is never looked for one.
  PipeRun jdk17 = run_pipe(dump, folder.path + "/other.fifo", 65536, false);
  EXPECT_EQ(jdk17.out, whole);
  EXPECT_TRUE(jdk17.note.empty());
}

// A side file the JVM did not make is never read (another user could have planted it where the
// pipe's folder is not private): a link to the right bytes, a file with a second name, a pipe, a
// file of another user. The pipe's bytes are used instead, and nothing waits.
TEST(VmDumpPipeReader, RefusesASideFileTheJvmDidNotMake) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  TempFolder folder;
  const std::string real = folder.write("real", dump.data.data() + segments, end - segments);
  ASSERT_EQ(0, ::symlink(real.c_str(), (folder.path + "/link.fifo.p0").c_str()));
  folder.write("linked.fifo.p0", dump.data.data() + segments, end - segments);
  ASSERT_EQ(0, ::link((folder.path + "/linked.fifo.p0").c_str(), (folder.path + "/second-name").c_str()));
  ASSERT_EQ(0, ::mkfifo((folder.path + "/pipe.fifo.p0").c_str(), 0600));
  std::vector<std::pair<std::string, std::string>> cases = {
      {"link", "Too many levels of symbolic links"},  // O_NOFOLLOW's ELOOP
      {"linked", "2 links to it"},
      {"pipe", "not a regular file"}};
  if (::geteuid() == 0) {
    std::string theirs = folder.write("theirs.fifo.p0", dump.data.data() + segments, end - segments);
    ASSERT_EQ(0, ::chown(theirs.c_str(), 65534, 65534));
    cases.emplace_back("theirs", "owned by user 65534");
  }
  for (const auto& [name, why] : cases) {
    PipeRun run = run_pipe(dump, folder.path + "/" + name + ".fifo", 65536);
    EXPECT_EQ(run.out, whole) << name;
    EXPECT_EQ(run.side_files, 0u) << name;
    EXPECT_EQ(run.skipped, 0u) << name;
    EXPECT_NE(run.note.find(why), std::string::npos) << name << ": " << run.note;
  }
}

}  // namespace
}  // namespace fasthprof
