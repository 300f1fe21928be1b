#include "heap/hotspot_dump_run.h"

#include <pthread.h>
#include <sys/statvfs.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <new>
#include <vector>

#include "base/clock.h"
#include "base/stderr_line.h"

namespace fasthprof {

namespace {

// Hands a side file's bytes to the rewriter (OutputStream is what StagingFile::copy_to writes to).
class RewriterInput final : public OutputStream {
 public:
  explicit RewriterInput(VmDumpRewriter& rewriter) : rewriter_(rewriter) {}
  void write(const void* data, size_t size) override {
    if (ok_) ok_ = rewriter_.feed(static_cast<const uint8_t*>(data), size);
  }
  bool ok() const { return ok_; }

 private:
  VmDumpRewriter& rewriter_;
  bool ok_ = true;
};

// Closes the JVM's side files on a thread of its own (a plain pthread that calls nothing but
// close): their last close frees the dump's pages in the page cache (about 0.25 s for 350 MB here),
// which need not stand between the dump and its "done." line. Inline if no thread can be had.
void close_in_background(std::vector<int> fds) {
  if (fds.empty()) return;
  auto* owned = new (std::nothrow) std::vector<int>(std::move(fds));
  if (owned == nullptr) {  // nothing was moved
    for (int fd : fds) ::close(fd);
    return;
  }
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);  // the VM's signals stay with its own threads
  pthread_t thread;
  int made = pthread_create(&thread, &attributes, [](void* arg) -> void* {
    auto* list = static_cast<std::vector<int>*>(arg);
    for (int fd : *list) ::close(fd);
    delete list;
    return nullptr;
  }, owned);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  pthread_attr_destroy(&attributes);
  if (made != 0) {
    for (int fd : *owned) ::close(fd);
    delete owned;
  }
}

}  // namespace

std::string side_file_room(const std::string& folder, uint64_t used_heap_bytes, bool net) {
  struct statvfs fs{};
  if (statvfs(folder.c_str(), &fs) != 0) return "";
  uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  uint64_t needed = used_heap_bytes * (net ? 1 : 2);
  if (needed <= free_bytes) return "";
  return "about " + std::to_string(needed >> 20) + " MB needed in " + folder + " for the dump and its side file, " +
         std::to_string(free_bytes >> 20) + " MB free";
}

HotSpotDumpRun::HotSpotDumpRun(VmDumpNumbering& numbering, AsyncSink& sink, const char* dumper, std::string folder,
                               bool stage, bool side_files)
    : sink_(sink), dumper_(dumper), folder_(std::move(folder)), stage_(stage), rewriter_(numbering, sink),
      side_files_(side_files) {}

// The sink copies from the JVM's side files on its own thread: they stay open until it is done
// (every path out of a run that wrote something has flushed or abandoned the report by then).
HotSpotDumpRun::~HotSpotDumpRun() {
  if (!reader_ || reader_->side_files() == 0) return;
  sink_.flush();
  close_in_background(reader_->release_files());
}

bool HotSpotDumpRun::open(std::string* error) {
  drain_ = FifoDrain::create(folder_, error);
  if (!drain_) return false;
  if (stage_) {
    staged_ = StagingFile::create(folder_, error);
    if (!staged_) return false;
  }
  FifoDrain* pipe = drain_.get();
  reader_ = std::make_unique<VmDumpPipeReader>(rewriter_, drain_->path(), side_files_,
                                               [pipe](uint64_t bytes) { pipe->skip(bytes); });
  return drain_->start([this](const void* data, size_t size) { return consume(data, size); }, error);
}

bool HotSpotDumpRun::consume(const void* data, size_t size) {
  try {
    if (staged_) {
      staged_->write(data, size);
      return !staged_->failed();
    }
    return reader_->take(static_cast<uint8_t*>(const_cast<void*>(data)), size);
  } catch (const std::bad_alloc&) {
    consumer_failure_ = "out of memory";
  } catch (const std::exception& thrown) {
    consumer_failure_ = thrown.what();
  }
  return false;
}

void HotSpotDumpRun::dump_into_pipe(const std::function<DumpReply(const std::string& pipe)>& request) {
  request_started_ = monotonic_ns();
  reply_ = request(drain_->path());
  jvm_seconds_ = seconds_since(request_started_);
  bytes_in_ = drain_->finish();
}

DumpOutcome HotSpotDumpRun::take() {
  DumpOutcome outcome = check_reply();
  if (outcome != DumpOutcome::kDone) return outcome;
  if (staged_) {
    outcome = copy_staged();
    if (outcome != DumpOutcome::kDone) return outcome;
  }
  if (!rewriter_.finish()) {
    if (rewriter_.stats().bytes_out == 0) {
      rewriter_.abandon();
      return fall_back("its output: " + rewriter_.error());
    }
    return abandon("the JVM's dump: " + rewriter_.error());
  }
  // A write error of the sink (a full disk) cut the report back and said so: the names this dump
  // wrote are gone with it.
  uint64_t flush_started = monotonic_ns();
  sink_.flush();
  flush_seconds_ = seconds_since(flush_started);
  if (sink_.failed()) rewriter_.abandon();
  return DumpOutcome::kDone;
}

DumpOutcome HotSpotDumpRun::check_reply() {
  uint64_t written = rewriter_.stats().bytes_out;
  if (!reply_.done) {
    // A full disk fails the JVM's side file (JDK 22+) as it would fail the walk's output: one
    // message and the report cut back, rather than a second failure by another dumper.
    if (written == 0 && !reply_.out_of_room) return fall_back(reply_.reason);
    return abandon(reply_.reason);
  }
  if (!consumer_failure_.empty()) return abandon(consumer_failure_);
  if (!drain_->error().empty()) {
    if (written == 0) {
      rewriter_.abandon();
      return fall_back(drain_->error());
    }
    return abandon(drain_->error());
  }
  return DumpOutcome::kDone;
}

// JDK 17-21 with net= or gz=y: the dump went to a local side file first; it is rewritten now.
DumpOutcome HotSpotDumpRun::copy_staged() {
  if (staged_->failed()) {
    rewriter_.abandon();
    return fall_back("the side file: " + staged_->error());
  }
  uint64_t copy_started = monotonic_ns();
  RewriterInput input(rewriter_);
  std::string error;
  if (!staged_->copy_to(input, &error)) return abandon("its side file: " + error);
  copy_seconds_ = seconds_since(copy_started);
  return DumpOutcome::kDone;
}

// One line of key=value figures (verbose=y), as the walk's.
void HotSpotDumpRun::print_stats(uint64_t started, const std::string& extra) const {
  using ull = unsigned long long;
  const VmDumpStats& stats = rewriter_.stats();
  // Seconds from the request to a time stamp taken on the drain thread (0 when it was not taken).
  auto at = [this](uint64_t ns) { return ns == 0 ? 0.0 : static_cast<double>(ns - request_started_) / 1e9; };
  char line[768];
  std::snprintf(line, sizeof line,
                "fasthprof: heap dump stats: dumper=%s seconds=%.3f jvm_seconds=%.3f copy_seconds=%.3f "
                "bytes_in=%llu bytes_out=%llu records=%llu segments=%llu sub_records=%llu utf8_dropped=%llu roots_renamed=%llu "
                "side_files=%u side_file_bytes=%llu kernel_copied=%llu first_byte_seconds=%.3f "
                "side_file_opened_seconds=%.3f side_file_read_seconds=%.3f flush_seconds=%.3f%s\n",
                dumper_, seconds_since(started), jvm_seconds_, copy_seconds_, static_cast<ull>(bytes_in_),
                static_cast<ull>(stats.bytes_out), static_cast<ull>(stats.records), static_cast<ull>(stats.segments),
                static_cast<ull>(stats.sub_records), static_cast<ull>(stats.utf8_dropped), static_cast<ull>(stats.roots_renamed), reader_->side_files(),
                static_cast<ull>(reader_->side_file_bytes()), static_cast<ull>(stats.file_range_bytes),
                at(reader_->first_byte_ns()), at(reader_->side_file_opened_ns()), at(reader_->side_file_read_ns()),
                flush_seconds_, extra.c_str());
  write_stderr(line);
  if (!reader_->note().empty()) write_stderr("fasthprof: heap dump: the pipe's bytes were used: " + reader_->note() + "\n");
}


}  // namespace fasthprof
