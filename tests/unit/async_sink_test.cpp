// The sink: round trips, ordering, back pressure, and the error policy of docs/decisions.md ("Binary
// format", last paragraphs) on files, devices, size limits and sockets.
#include "base/memory.h"
#include "loopback_peer.h"
#include "memory_backend.h"
#include "sink/async_sink.h"
#include "sink/file_backend.h"
#include "sink/socket_backend.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fasthprof {
namespace {

using Bytes = std::vector<uint8_t>;

// Collects the sink's messages; the io thread calls it.
struct Messages {
  std::mutex mutex;
  std::vector<std::string> lines;

  SinkErrorReporter reporter() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(line);
    };
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return lines;
  }
};

using MemoryState = MemoryBackendState;

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/fasthprof_sink_" +
         std::to_string(getpid()) + "_" + name;
}

std::unique_ptr<AsyncSink> make_sink(std::unique_ptr<SinkBackend> backend, size_t buffer_size,
                                     Messages* messages, size_t buffer_count = 2) {
  AsyncSinkOptions options;
  options.buffer_size = buffer_size;
  options.buffer_count = buffer_count;
  if (messages != nullptr) options.reporter = messages->reporter();
  std::string error;
  auto sink = AsyncSink::create(std::move(backend), options, &error);
  EXPECT_NE(sink, nullptr) << error;
  return sink;
}

void write_report(AsyncSink* sink, const Bytes& bytes, size_t chunk) {
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    sink->write(bytes.data() + i, std::min(chunk, bytes.size() - i));
  }
}

// A sink of buffer_size buffers on a memory backend that takes quota bytes, its messages kept.
struct QuotaSink {
  QuotaSink(size_t quota, size_t buffer_size, bool can_truncate = true) {
    state.quota = quota;
    state.can_truncate = can_truncate;
    sink = make_sink(std::make_unique<MemoryBackend>(&state), buffer_size, &messages);
  }
  MemoryState state;
  Messages messages;
  std::unique_ptr<AsyncSink> sink;
};

// One report of bytes written in pieces of chunk bytes: whether end_report() took it whole.
bool whole_report(AsyncSink* sink, const Bytes& bytes, size_t chunk) {
  sink->begin_report();
  write_report(sink, bytes, chunk);
  return sink->end_report();
}

Bytes concat(std::initializer_list<const Bytes*> parts) {
  Bytes all;
  for (const Bytes* part : parts) all.insert(all.end(), part->begin(), part->end());
  return all;
}

TEST(AsyncSink, RoundTripsThroughAFileInManyChunkSizes) {
  const std::string path = temp_path("roundtrip");
  for (size_t buffer_count : {2, 3, 16}) {
    for (size_t buffer_size : {size_t{4096}, size_t{1} << 16, size_t{1} << 20}) {
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, size_t{65539}, size_t{3} << 20}) {
        const Bytes data = noise_bytes(chunk == 1 ? 300000 : (size_t{5} << 20) + 123, chunk);
        std::string error;
        auto backend = FileBackend::open(path, &error);
        ASSERT_NE(backend, nullptr) << error;
        auto sink = make_sink(std::move(backend), buffer_size, nullptr, buffer_count);
        write_report(sink.get(), data, chunk);
        sink->close();
        EXPECT_FALSE(sink->failed());
        EXPECT_EQ(read_file(path), data)
            << buffer_count << " buffers of " << buffer_size << ", chunk " << chunk;
      }
    }
  }
  unlink(path.c_str());
}

TEST(AsyncSink, PreservesOrderAcrossManyBufferSwaps) {
  MemoryState state;
  auto sink = make_sink(std::make_unique<MemoryBackend>(&state), 64, nullptr, 5);
  Bytes expected;
  for (uint32_t i = 0; i < 100000; ++i) {
    // Chunks of 1 to 13 bytes, so that chunks straddle buffer boundaries at every offset.
    const size_t size = 1 + i % 13;
    uint8_t chunk[13];
    for (size_t k = 0; k < size; ++k) chunk[k] = static_cast<uint8_t>(i * 31 + k);
    sink->write(chunk, size);
    expected.insert(expected.end(), chunk, chunk + size);
  }
  sink->flush();
  EXPECT_EQ(state.data, expected);
  EXPECT_GT(state.write_calls, 10000);
  sink->close();
  EXPECT_TRUE(state.closed);
}

TEST(AsyncSink, SlowBackendMakesTheProducerWaitAndLosesNothing) {
  for (size_t buffer_count : {2, 8}) {
    MemoryState state;
    state.delay = std::chrono::milliseconds(2);
    constexpr size_t kBuffer = 4096;
    auto sink = make_sink(std::make_unique<MemoryBackend>(&state), kBuffer, nullptr, buffer_count);
    const Bytes data = noise_bytes(100 * kBuffer, 3);
    const auto start = std::chrono::steady_clock::now();
    write_report(sink.get(), data, 1000);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    // 100 buffers at 2 ms each, at most buffer_count in flight: write() itself must have waited.
    EXPECT_GE(elapsed, std::chrono::milliseconds(2 * (100 - buffer_count - 1)));
    EXPECT_TRUE(sink->end_report());
    EXPECT_EQ(state.data, data);
  }
}

// The output buffers are the agent's memory: they count in its figures (whole pages each), and
// go back when the sink does.
TEST(AsyncSink, BuffersComeFromTheAgentAllocator) {
  uint64_t before = memory::bytes_in_use();
  {
    MemoryState state;
    auto sink = make_sink(std::make_unique<MemoryBackend>(&state), 10000, nullptr, 3);
    ASSERT_NE(sink, nullptr);
    EXPECT_GE(memory::bytes_in_use(), before + 3 * 12288);
  }
  EXPECT_EQ(memory::bytes_in_use(), before);
}

TEST(AsyncSink, RefusesFewerThanTwoBuffersOrEmptyOnes) {
  for (auto [size, count] : {std::pair<size_t, size_t>{0, 2}, {64, 1}, {64, 0}}) {
    MemoryState state;
    AsyncSinkOptions options;
    options.buffer_size = size;
    options.buffer_count = count;
    std::string error;
    EXPECT_EQ(AsyncSink::create(std::make_unique<MemoryBackend>(&state), options, &error), nullptr);
    EXPECT_EQ(error, "the output sink needs at least two buffers of at least one byte");
    EXPECT_TRUE(state.closed);
  }
}

TEST(AsyncSink, FailedReportIsCutBackAndTheNextReportTriesAgain) {
  QuotaSink quota_sink(50000, 1024);
  auto& [state, messages, sink] = quota_sink;
  const Bytes r1 = noise_bytes(20000, 1), r2 = noise_bytes(20000, 2), r3 = noise_bytes(30000, 3),
              r4 = noise_bytes(20000, 4);
  for (const Bytes* report : {&r1, &r2}) {
    EXPECT_TRUE(whole_report(sink.get(), *report, 100));
  }
  EXPECT_FALSE(whole_report(sink.get(), r3, 100));
  EXPECT_TRUE(sink->failed());
  EXPECT_EQ(state.data, concat({&r1, &r2}));
  EXPECT_EQ(messages.get(),
            std::vector<std::string>{"fasthprof: error writing memory: No space left on device; the file was "
                                     "truncated to the last complete report (40000 bytes)"});

  state.quota = SIZE_MAX;
  sink->begin_report();
  EXPECT_FALSE(sink->failed());
  write_report(sink.get(), r4, 100);
  EXPECT_TRUE(sink->end_report());
  EXPECT_EQ(state.data, concat({&r1, &r2, &r4}));
  EXPECT_EQ(messages.get().size(), 1u);
}

TEST(AsyncSink, RepeatedFailuresAreReportedOnceUntilAReportSucceeds) {
  QuotaSink quota_sink(100, 256);
  auto& [state, messages, sink] = quota_sink;
  const Bytes big = noise_bytes(1000, 5), small = noise_bytes(10, 6);
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(whole_report(sink.get(), big, 64));
  }
  EXPECT_EQ(messages.get().size(), 1u);
  EXPECT_TRUE(state.data.empty());
  EXPECT_TRUE(whole_report(sink.get(), small, 64));
  EXPECT_FALSE(whole_report(sink.get(), big, 64));
  EXPECT_EQ(messages.get().size(), 2u);
  EXPECT_EQ(state.data, small);
}

TEST(AsyncSink, BytesOutsideReportsAreCutBackToTheLastCompleteReport) {
  QuotaSink quota_sink(300, 64);
  auto& [state, messages, sink] = quota_sink;
  const Bytes header = noise_bytes(100, 7), tail = noise_bytes(500, 8);
  write_report(sink.get(), header, 10);
  EXPECT_TRUE(sink->end_report());
  write_report(sink.get(), tail, 10);
  sink->flush();
  EXPECT_TRUE(sink->failed());
  EXPECT_EQ(state.data, header);
  // Dropped until the next report begins.
  write_report(sink.get(), header, 10);
  sink->flush();
  EXPECT_EQ(state.data, header);
}

TEST(AsyncSink, UntruncatableBackendOnlyGetsTheMessage) {
  QuotaSink quota_sink(150, 64, /*can_truncate=*/false);
  auto& [state, messages, sink] = quota_sink;
  EXPECT_FALSE(whole_report(sink.get(), noise_bytes(400, 9), 50));
  EXPECT_EQ(state.data.size(), 150u);
  EXPECT_EQ(messages.get(), std::vector<std::string>{"fasthprof: error writing memory: No space left on device"});
}

// A sink (4 KiB buffers) on /dev/full, where every write fails with ENOSPC and nothing can be cut
// back.
void open_dev_full_sink(Messages* messages, std::unique_ptr<AsyncSink>* sink) {
  std::string error;
  auto backend = FileBackend::open("/dev/full", &error);
  ASSERT_NE(backend, nullptr) << error;
  EXPECT_FALSE(backend->can_truncate());
  *sink = make_sink(std::move(backend), 4096, messages);
}

TEST(AsyncSink, DevFullGetsOneMessageAndNoSpam) {
  Messages messages;
  std::unique_ptr<AsyncSink> sink;
  ASSERT_NO_FATAL_FAILURE(open_dev_full_sink(&messages, &sink));
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(whole_report(sink.get(), noise_bytes(10000, i), 1000));
  }
  write_report(sink.get(), noise_bytes(10000, 9), 1000);
  sink->close();
  EXPECT_EQ(messages.get(), std::vector<std::string>{"fasthprof: error writing /dev/full: No space left on device"});
}

// The agent brackets every report, even one with nothing in it; an empty report that "succeeds"
// on a full device must not re-arm the message.
TEST(AsyncSink, EmptyReportsBetweenFailuresDoNotRepeatTheMessage) {
  Messages messages;
  std::unique_ptr<AsyncSink> sink;
  ASSERT_NO_FATAL_FAILURE(open_dev_full_sink(&messages, &sink));
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(whole_report(sink.get(), noise_bytes(10000, i), 1000));
    sink->begin_report();
    EXPECT_TRUE(sink->end_report());
  }
  sink->close();
  EXPECT_EQ(messages.get().size(), 1u);
}

// RLIMIT_FSIZE stands in for a full disk: writes past it fail with EFBIG. It is per process, so a
// scenario runs in a child: body gets a sink (4 KiB buffers) on a new file at path under a limit of
// `limit` bytes, and a call that puts the original limit back; it returns the child's exit code (0
// when every step passed). The sink's messages come back through a pipe.
struct LimitedRun {
  bool exited = false;
  int code = -1;  // exit code, or the signal that ended the child
  std::string messages;
};
LimitedRun run_with_size_limit(const std::string& path, rlim_t limit,
                               const std::function<int(AsyncSink&, const std::function<bool()>&)>& body) {
  LimitedRun run;
  int message_pipe[2];
  if (pipe(message_pipe) != 0) return run;
  const pid_t child = fork();
  if (child < 0) return run;
  if (child == 0) {
    close(message_pipe[0]);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limits;
    getrlimit(RLIMIT_FSIZE, &limits);
    const rlim_t original = limits.rlim_cur;
    limits.rlim_cur = limit;
    if (setrlimit(RLIMIT_FSIZE, &limits) != 0) _exit(120);
    std::string error;
    auto backend = FileBackend::open(path, &error);
    if (backend == nullptr) _exit(121);
    AsyncSinkOptions options;
    options.buffer_size = 4096;
    const int out = message_pipe[1];
    options.reporter = [out](const std::string& line) {
      const std::string text = line + "\n";
      if (::write(out, text.data(), text.size()) < 0) _exit(122);
    };
    auto sink = AsyncSink::create(std::move(backend), options, &error);
    if (sink == nullptr) _exit(123);
    auto raise_limit = [&limits, original] {
      limits.rlim_cur = original;
      return setrlimit(RLIMIT_FSIZE, &limits) == 0;
    };
    const int code = body(*sink, raise_limit);
    sink->close();
    _exit(code);
  }
  close(message_pipe[1]);
  char buffer[512];
  ssize_t n;
  while ((n = read(message_pipe[0], buffer, sizeof buffer)) > 0) run.messages.append(buffer, n);
  close(message_pipe[0]);
  int status = 0;
  if (waitpid(child, &status, 0) != child) return run;
  run.exited = WIFEXITED(status);
  run.code = run.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  return run;
}

// A run whose every step passed, with the one message of the file at path cut back to kept bytes
// when it reached the limit, and expected in the file.
void expect_cut_back_at_the_limit(const LimitedRun& run, const std::string& path, size_t kept, const Bytes& expected) {
  ASSERT_TRUE(run.exited) << "child died of signal " << run.code;
  EXPECT_EQ(run.code, 0) << "step that failed: see the return codes in the child";
  EXPECT_EQ(run.messages, "fasthprof: error writing " + path +
                              ": File too large; the file was truncated to the last complete report (" +
                              std::to_string(kept) + " bytes)\n");
  EXPECT_EQ(read_file(path), expected);
}

TEST(AsyncSink, FileSizeLimitKeepsTheCompleteReportsAndLaterReportsAppend) {
  const std::string path = temp_path("fsize");
  const Bytes r1(20000, 'a'), r2(20000, 'b'), r3(30000, 'c'), r4(20000, 'd');
  LimitedRun run = run_with_size_limit(path, 64 * 1024, [&](AsyncSink& sink, const std::function<bool()>& raise_limit) {
    for (const Bytes* report : {&r1, &r2}) {
      if (!whole_report(&sink, *report, 1000)) return 24;
    }
    if (whole_report(&sink, r3, 1000)) return 25;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_size != 40000) return 26;
    if (!raise_limit()) return 27;
    if (!whole_report(&sink, r4, 1000)) return 28;
    return 0;
  });
  expect_cut_back_at_the_limit(run, path, 40000, concat({&r1, &r2, &r4}));
  unlink(path.c_str());
}

// write_file_range: the ranges land between the buffers written before and after them, whether
// the backend has the kernel copy them (a file), falls back to reading them (a file opened for
// appending, where copy_file_range and sendfile refuse) or has no kernel copy at all (memory).
TEST(AsyncSink, FileRangesLandBetweenTheBuffersInOrder) {
  const std::string source_path = temp_path("range_source");
  const Bytes source = noise_bytes((size_t{3} << 20) + 11, 5);
  write_file(source_path, source);
  const int source_fd = open(source_path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(source_fd, 0);
  const Bytes a(1000, 'a'), b(5000, 'b');
  const Bytes range1(source.begin() + 5, source.begin() + 5 + (size_t{2} << 20) + 17);
  const Bytes range2(source.begin(), source.begin() + 10);
  const Bytes expected = concat({&a, &range1, &b, &range2, &a});
  auto write_all_parts = [&](AsyncSink* sink) {
    sink->begin_report();
    sink->write(a.data(), a.size());
    EXPECT_TRUE(sink->write_file_range(source_fd, 5, range1.size()));
    sink->write(b.data(), b.size());
    EXPECT_TRUE(sink->write_file_range(source_fd, 0, range2.size()));
    sink->write(a.data(), a.size());
    EXPECT_TRUE(sink->end_report());
  };
  const std::string path = temp_path("ranges");
  for (bool append : {false, true}) {
    unlink(path.c_str());
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : 0) | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    auto sink = make_sink(std::make_unique<FileBackend>(fd, path), 4096, nullptr, 4);
    write_all_parts(sink.get());
    sink->close();
    EXPECT_EQ(read_file(path), expected) << (append ? "O_APPEND" : "plain file");
  }
  MemoryState state;
  auto sink = make_sink(std::make_unique<MemoryBackend>(&state), 4096, nullptr, 2);
  write_all_parts(sink.get());
  sink->close();
  EXPECT_EQ(state.data, expected) << "memory backend";
  close(source_fd);
  unlink(path.c_str());
  unlink(source_path.c_str());
}

// A file range that passes the file size limit fails the report like a failed write: cut back to
// the last complete report, one message, the next report appends.
TEST(AsyncSink, FileRangePastTheSizeLimitCutsTheReportBack) {
  const std::string path = temp_path("range_fsize");
  const std::string source_path = temp_path("range_fsize_source");
  const Bytes source = noise_bytes(200000, 9);
  write_file(source_path, source);
  const Bytes r1(20000, 'a'), r3(1000, 'c');
  LimitedRun run = run_with_size_limit(path, 64 * 1024, [&](AsyncSink& sink, const std::function<bool()>&) {
    const int source_fd = open(source_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (source_fd < 0) return 21;
    if (!whole_report(&sink, r1, 1000)) return 24;
    sink.begin_report();
    sink.write(r3.data(), r3.size());
    sink.write_file_range(source_fd, 0, source.size());
    if (sink.end_report()) return 25;
    if (!whole_report(&sink, r3, 1000)) return 26;
    return 0;
  });
  expect_cut_back_at_the_limit(run, path, 20000, concat({&r1, &r3}));
  unlink(path.c_str());
  unlink(source_path.c_str());
}

TEST(FileBackend, CreatesTheFileWithMode0600) {
  const std::string path = temp_path("mode");
  unlink(path.c_str());
  const mode_t old_mask = umask(0);
  std::string error;
  auto backend = FileBackend::open(path, &error);
  umask(old_mask);
  ASSERT_NE(backend, nullptr) << error;
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(backend->can_truncate());
  backend->close();
  unlink(path.c_str());
}

TEST(FileBackend, OpenFailureNamesThePath) {
  std::string error;
  EXPECT_EQ(FileBackend::open("/nonexistent-dir/x.hprof", &error), nullptr);
  EXPECT_EQ(error, "/nonexistent-dir/x.hprof: No such file or directory");
}

TEST(AsyncSink, CloseIsIdempotentAndLaterWritesAreDropped) {
  MemoryState state;
  auto sink = make_sink(std::make_unique<MemoryBackend>(&state), 64, nullptr);
  const Bytes data = noise_bytes(100, 10);
  write_report(sink.get(), data, 30);
  sink->close();
  sink->close();
  sink->write(data.data(), data.size());
  sink->flush();
  sink->begin_report();
  EXPECT_FALSE(sink->end_report());
  EXPECT_EQ(state.data, data);
}

TEST(AsyncSink, NamesItsThreadFasthprofIo) {
  auto count_io_threads = [] {
    int count = 0;
    DIR* tasks = opendir("/proc/self/task");
    if (tasks == nullptr) return -1;
    while (struct dirent* entry = readdir(tasks)) {
      if (entry->d_name[0] == '.') continue;
      std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
      std::string name;
      std::getline(comm, name);
      if (name == "fasthprof-io") ++count;
    }
    closedir(tasks);
    return count;
  };
  const int before = count_io_threads();
  MemoryState state;
  auto sink = make_sink(std::make_unique<MemoryBackend>(&state), 64, nullptr);
  EXPECT_EQ(count_io_threads(), before + 1);
  sink->close();
  EXPECT_EQ(count_io_threads(), before);
}

// Connects to host, checks the backend's name and that the peer receives all of size bytes.
void expect_connects_and_sends(LoopbackConnection* c, const char* host, const std::string& name, size_t size,
                               uint32_t seed) {
  ASSERT_NO_FATAL_FAILURE(c->connect(host));
  EXPECT_EQ(c->name, name);
  const Bytes data = noise_bytes(size, seed);
  EXPECT_TRUE(c->backend->write_all(data.data(), data.size()).ok()) << host;
  EXPECT_EQ(receive(c->peer, data.size()), data) << host;
  c->close_peer();
}

TEST(SocketBackend, ConnectsToIpv4AndHostNames) {
  LoopbackConnection c(AF_INET);
  for (const char* host : {"127.0.0.1", "localhost"}) {
    expect_connects_and_sends(&c, host, std::string(host) + ":" + std::to_string(c.listener.port()), 5000, 11);
  }
}

TEST(SocketBackend, ConnectsToIpv6) {
  LoopbackConnection c(AF_INET6);
  if (!c.listener.ok()) GTEST_SKIP() << "no IPv6 loopback here";
  expect_connects_and_sends(&c, "::1", "[::1]:" + std::to_string(c.listener.port()), 3000, 12);
}

TEST(SocketBackend, ClosedPortGivesAClearError) {
  Listener listener(AF_INET);
  ASSERT_TRUE(listener.ok());
  const int port = listener.port();
  listener.close();
  std::string error;
  EXPECT_EQ(connect_socket("127.0.0.1", port, &error), -1);
  EXPECT_EQ(error, "127.0.0.1 port " + std::to_string(port) + ": Connection refused");
}

TEST(SocketBackend, BadHostNameGivesAClearError) {
  std::string error;
  EXPECT_EQ(connect_socket("no-such-host.invalid", 4711, &error), -1);
  EXPECT_EQ(error.rfind("cannot resolve host 'no-such-host.invalid': ", 0), 0u) << error;
  EXPECT_EQ(connect_socket("localhost", 0, &error), -1);
  EXPECT_EQ(error, "invalid port number 0");
  EXPECT_EQ(connect_socket("localhost", 70000, &error), -1);
}

TEST(SocketBackend, ClosedPeerGivesAnErrorNotSigpipe) {
  // This thread does not block SIGPIPE: MSG_NOSIGNAL alone must keep the process alive.
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ::close(pair[1]);
  SocketBackend backend(pair[0], "pair");
  const Bytes data = noise_bytes(100, 13);
  const WriteResult result = backend.write_all(data.data(), data.size());
  EXPECT_TRUE(result.error == EPIPE || result.error == ECONNRESET) << result.error;
}

TEST(AsyncSink, SocketPeerThatClosesEndsOutputWithOneMessage) {
  LoopbackConnection c;
  ASSERT_NO_FATAL_FAILURE(c.connect());
  Messages messages;
  auto sink = make_sink(std::move(c.backend), 4096, &messages);
  const Bytes first = noise_bytes(10000, 14);
  EXPECT_TRUE(whole_report(sink.get(), first, 1000));
  EXPECT_EQ(receive(c.peer, first.size()), first);
  c.close_peer();
  // TCP may accept a send or two after the peer closed, until its reset arrives.
  bool ended = false;
  for (int i = 0; i < 200 && !ended; ++i) {
    sink->begin_report();
    write_report(sink.get(), noise_bytes(20000, i), 1000);
    ended = !sink->end_report();
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(ended);
  EXPECT_TRUE(sink->output_ended());
  for (int i = 0; i < 3; ++i) {
    sink->begin_report();
    EXPECT_TRUE(sink->failed());
    write_report(sink.get(), noise_bytes(20000, i), 1000);
    EXPECT_FALSE(sink->end_report());
  }
  sink->close();
  const auto lines = messages.get();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("fasthprof: error writing to " + c.name + ": ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("; the connection was closed and no more output will be sent"),
            std::string::npos)
      << lines[0];
}

// A peer that accepted and never reads: with a send timeout the write gives up once nothing has
// moved for that long (instead of waiting for as long as the peer stays connected), with one
// message, and output ends.
TEST(AsyncSink, SocketPeerThatNeverReadsTimesOutWithOneMessage) {
  LoopbackConnection c;
  ASSERT_NO_FATAL_FAILURE(c.connect("127.0.0.1", /*send_timeout_seconds=*/1));
  Messages messages;
  auto sink = make_sink(std::move(c.backend), 1 << 16, &messages);
  sink->begin_report();
  // Far more than the kernel's socket buffers on both ends can hold.
  const Bytes chunk = noise_bytes(1 << 20, 21);
  for (int i = 0; i < 256 && !sink->failed(); ++i) write_report(sink.get(), chunk, 1 << 16);
  EXPECT_FALSE(sink->end_report());
  EXPECT_TRUE(sink->output_ended());
  sink->close();
  c.close_peer();
  const auto lines = messages.get();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "fasthprof: error writing to " + c.name +
                          ": the peer took no data for 1 second; the connection was closed and no more "
                          "output will be sent");
}

// The timeout bounds a stall, not the whole transfer: a peer that reads slowly but steadily (here
// 48 MiB at about 16 MiB/s, three times the timeout in all) gets every byte.
// The send timeout is a limit on a stall, not on the whole transfer: a reader that takes 160 KiB
// every 30 ms needs about 4.5 s for 24 MiB, longer than the 3 s timeout, and gets every byte. (The
// timeout leaves a loaded machine 3 s to schedule the reader: with 1 s, CI's sanitizer build under
// load once saw the peer cut off.)
TEST(AsyncSink, SocketPeerThatReadsSlowlyGetsEverything) {
  LoopbackConnection c;
  ASSERT_NO_FATAL_FAILURE(c.connect("127.0.0.1", /*send_timeout_seconds=*/3));
  const int peer = c.peer;
  const Bytes data = noise_bytes(24 << 20, 22);
  Bytes received;
  const auto start = std::chrono::steady_clock::now();
  std::thread reader([&] {
    std::vector<uint8_t> buffer(160 << 10);
    while (received.size() < data.size()) {
      const ssize_t n = recv(peer, buffer.data(), buffer.size(), 0);
      if (n <= 0) break;
      received.insert(received.end(), buffer.begin(), buffer.begin() + n);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  });
  Messages messages;
  auto sink = make_sink(std::move(c.backend), 1 << 16, &messages);
  EXPECT_TRUE(whole_report(sink.get(), data, 1 << 16));
  sink->close();
  reader.join();
  c.close_peer();
  EXPECT_TRUE(messages.get().empty());
  EXPECT_TRUE(received == data) << received.size() << " of " << data.size() << " bytes";
  EXPECT_GT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3)) << "the transfer outlasted the timeout";
}

}  // namespace
}  // namespace fasthprof
