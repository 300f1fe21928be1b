#include "heap/vm_heap_dump.h"

#include <pthread.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

#include "base/clock.h"
#include "base/stderr_line.h"
#include "heap/hotspot_flags.h"
#include "heap_dump/heap_dump_staging.h"
#include "vm_dump/fifo_drain.h"
#include "vm_dump/vm_dump_pipe.h"

namespace fasthprof {

namespace {

// How long a SIGQUIT may take to bring up the attach listener (about 20 ms when the machine is
// idle; jcmd waits some seconds too).
constexpr int kListenerStartMs = 10000;

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

std::string megabytes(uint64_t bytes) { return std::to_string(bytes >> 20) + " MB"; }

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

// The reply of a dump that worked: status 0 and HotSpot's "Heap dump file created" line.
bool dump_succeeded(const AttachReply& reply) {
  return reply.answered && reply.status == 0 && reply.text.find("Heap dump file created") != std::string::npos;
}

std::string reply_reason(const AttachReply& reply) {
  if (!reply.answered) return reply.error;
  std::string text = reply.text;
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.empty()) text = "status " + std::to_string(reply.status) + " without a message";
  return "the JVM replied: " + text;
}

// Says why the JVM's dumper is not used for this dump; the caller then runs the JVMTI walk.
VmHeapDump::Outcome fall_back(const std::string& why) {
  write_stderr("fasthprof: the JVM's heap dumper cannot be used (" + why + "); the JVMTI walk writes this dump\n");
  return VmHeapDump::Outcome::kFallBack;
}

}  // namespace

// One VM dump's pipe, drain thread, optional side file and rewriter (vm_heap_dump.h, steps 1-4).
class VmDumpRun {
 public:
  using Outcome = VmHeapDump::Outcome;

  VmDumpRun(VmDumpNumbering& numbering, AsyncSink& sink, const DumperPlan& plan, bool side_files)
      : sink_(sink), plan_(plan), rewriter_(numbering, sink), side_files_(side_files) {}

  // The sink copies from the JVM's side files on its own thread: they stay open until it is done
  // (every path out of a run that wrote something has flushed or abandoned the report by then).
  ~VmDumpRun() {
    if (!reader_ || reader_->side_files() == 0) return;
    sink_.flush();
    close_in_background(reader_->release_files());
  }

  // The pipe, the local side file (plan.stage), and the drain thread feeding the rewriter.
  bool open(std::string* error);
  // "jcmd GC.heap_dump" into the pipe; returns when the JVM has replied and the pipe is drained.
  void dump_into_pipe(HotSpotAttach& attach);
  // The drain thread is stopped without a dump.
  void abandon_drain() { drain_->finish(); }
  // What came back: kDone, or kFallBack (nothing written) / kAbandoned (report cut back), said.
  Outcome take();
  void print_stats(uint64_t started) const;

 private:
  // The drain thread's consumer: a plain pthread, so nothing may be thrown out of it.
  bool consume(const void* data, size_t size);
  Outcome abandon(const std::string& why) {
    rewriter_.abandon();
    sink_.abandon_report("the heap dump was left out: " + why);
    return Outcome::kAbandoned;
  }
  Outcome check_reply();
  Outcome copy_staged();

  AsyncSink& sink_;
  const DumperPlan& plan_;
  std::unique_ptr<FifoDrain> drain_;
  std::unique_ptr<StagingFile> staged_;
  VmDumpRewriter rewriter_;
  bool side_files_;
  std::unique_ptr<VmDumpPipeReader> reader_;
  std::string consumer_failure_;  // set by the drain thread, read after it ended
  AttachReply reply_;
  uint64_t request_started_ = 0;
  double jvm_seconds_ = 0, copy_seconds_ = 0, flush_seconds_ = 0;
  uint64_t bytes_in_ = 0;
};

bool VmDumpRun::open(std::string* error) {
  drain_ = FifoDrain::create(plan_.folder, error);
  if (!drain_) return false;
  if (plan_.stage) {
    staged_ = StagingFile::create(plan_.folder, error);
    if (!staged_) return false;
  }
  FifoDrain* pipe = drain_.get();
  reader_ = std::make_unique<VmDumpPipeReader>(rewriter_, drain_->path(), side_files_,
                                               [pipe](uint64_t bytes) { pipe->skip(bytes); });
  return drain_->start([this](const void* data, size_t size) { return consume(data, size); }, error);
}

bool VmDumpRun::consume(const void* data, size_t size) {
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

void VmDumpRun::dump_into_pipe(HotSpotAttach& attach) {
  request_started_ = monotonic_ns();
  reply_ = attach.jcmd("GC.heap_dump -overwrite " + drain_->path());
  jvm_seconds_ = seconds_since(request_started_);
  bytes_in_ = drain_->finish();
}

VmDumpRun::Outcome VmDumpRun::take() {
  Outcome outcome = check_reply();
  if (outcome != Outcome::kDone) return outcome;
  if (staged_) {
    outcome = copy_staged();
    if (outcome != Outcome::kDone) return outcome;
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
  return Outcome::kDone;
}

VmDumpRun::Outcome VmDumpRun::check_reply() {
  uint64_t written = rewriter_.stats().bytes_out;
  if (!dump_succeeded(reply_)) {
    // A full disk fails the JVM's side file (JDK 22+) as it would fail the walk's output: one
    // message and the report cut back, rather than a second failure by the walk.
    bool out_of_room = reply_.text.find("No space left") != std::string::npos ||
                       reply_.text.find("File too large") != std::string::npos ||
                       reply_.text.find("Disk quota") != std::string::npos;
    if (written == 0 && !out_of_room) return fall_back(reply_reason(reply_));
    return abandon("the JVM's dumper failed: " + reply_reason(reply_));
  }
  if (!consumer_failure_.empty()) return abandon(consumer_failure_);
  if (!drain_->error().empty()) {
    if (written == 0) {
      rewriter_.abandon();
      return fall_back(drain_->error());
    }
    return abandon(drain_->error());
  }
  return Outcome::kDone;
}

// JDK 17-21 with net= or gz=y: the dump went to a local side file first; it is rewritten now.
VmDumpRun::Outcome VmDumpRun::copy_staged() {
  if (staged_->failed()) {
    rewriter_.abandon();
    return fall_back("the side file: " + staged_->error());
  }
  uint64_t copy_started = monotonic_ns();
  RewriterInput input(rewriter_);
  std::string error;
  if (!staged_->copy_to(input, &error)) return abandon("its side file: " + error);
  copy_seconds_ = seconds_since(copy_started);
  return Outcome::kDone;
}

// One line of key=value figures (verbose=y), as the walk's.
void VmDumpRun::print_stats(uint64_t started) const {
  using ull = unsigned long long;
  const VmDumpStats& stats = rewriter_.stats();
  // Seconds from the request to a time stamp taken on the drain thread (0 when it was not taken).
  auto at = [this](uint64_t ns) { return ns == 0 ? 0.0 : static_cast<double>(ns - request_started_) / 1e9; };
  char line[512];
  std::snprintf(line, sizeof line,
                "fasthprof: heap dump stats: dumper=vm seconds=%.3f jvm_seconds=%.3f copy_seconds=%.3f "
                "bytes_in=%llu bytes_out=%llu records=%llu segments=%llu sub_records=%llu utf8_dropped=%llu "
                "side_files=%u side_file_bytes=%llu kernel_copied=%llu first_byte_seconds=%.3f "
                "side_file_opened_seconds=%.3f side_file_read_seconds=%.3f flush_seconds=%.3f\n",
                seconds_since(started), jvm_seconds_, copy_seconds_, static_cast<ull>(bytes_in_),
                static_cast<ull>(stats.bytes_out), static_cast<ull>(stats.records), static_cast<ull>(stats.segments),
                static_cast<ull>(stats.sub_records), static_cast<ull>(stats.utf8_dropped), reader_->side_files(),
                static_cast<ull>(reader_->side_file_bytes()), static_cast<ull>(stats.file_range_bytes),
                at(reader_->first_byte_ns()), at(reader_->side_file_opened_ns()), at(reader_->side_file_read_ns()),
                flush_seconds_);
  write_stderr(line);
  if (!reader_->note().empty()) write_stderr("fasthprof: heap dump: the pipe's bytes were used: " + reader_->note() + "\n");
}


VmHeapDump::VmHeapDump(const AgentContext& context) : context_(context), attach_(::getpid()) {}

int VmHeapDump::jdk_version() {
  if (jdk_ >= 0) return jdk_;
  jdk_ = 0;
  char* value = nullptr;
  if (context_.jvmti->GetSystemProperty("java.vm.specification.version", &value) == JVMTI_ERROR_NONE &&
      value != nullptr) {
    jdk_ = std::atoi(value);
    context_.jvmti->Deallocate(reinterpret_cast<unsigned char*>(value));
  }
  return jdk_;
}

DumperPlan VmHeapDump::plan(JNIEnv* /*jni*/, uint64_t index, bool at_exit,
                            const std::function<uint64_t()>& used_heap) {
  const Options& options = *context_.options;
  DumperPlan plan;
  HeapDumperChoice choice = options.dumpers[index % options.dumpers.size()];
  const char* asked = choice == HeapDumperChoice::kAuto ? "dumper=auto" : choice == HeapDumperChoice::kVm ? "dumper=vm" : "dumper=jvmti";
  auto walk = [&](const std::string& why) {
    plan.vm = false;
    plan.why = std::string(asked) + ": the JVMTI walk: " + why;
    return plan;
  };
  if (choice == HeapDumperChoice::kJvmti) return walk("as asked");
  if (options.format != OutputFormat::kBinary) return walk("format=a (the JVM's dumper writes binary dumps only)");
  if (options.alloc_sites) return walk("heap=all (allocation traces of objects come from the walk)");
  if (!options.primfields) return walk("primfields=n (the JVM's dumper writes every field)");
  if (!options.primarrays) return walk("primarrays=n (the JVM's dumper writes every array)");
  int jdk = jdk_version();
  if (jdk < 17) return walk("the JDK's version is unknown");
  bool tested = jdk == 17 || jdk >= 22;
  if (!tested && choice == HeapDumperChoice::kAuto) {
    return walk("JDK " + std::to_string(jdk) + " (the JVM's dumper is used by auto on JDK 17 and 22+ only)");
  }
  std::optional<bool> disabled = hotspot_bool_flag("DisableAttachMechanism");
  std::optional<bool> reduced = hotspot_bool_flag("ReduceSignalUsage");
  if (!disabled || !reduced) return walk("the VM's flags cannot be read (not HotSpot?)");
  if (*disabled) return walk("-XX:+DisableAttachMechanism");
  // VM death comes after HotSpot stopped its concurrent collector threads: on JDK 25 with ZGC the
  // dumper's collection then waits for ever (measured); JDK 17's ZGC skips it. The walk needs no GC.
  if (at_exit && jdk != 17 &&
      (hotspot_bool_flag("UseZGC").value_or(false) || hotspot_bool_flag("UseShenandoahGC").value_or(false))) {
    return walk("at VM death with a concurrent collector (ZGC, Shenandoah) the JVM's dumper would wait for it");
  }
  if (!attach_.socket_exists()) {
    if (*reduced) return walk("-Xrs and no attach socket at " + attach_.socket_path());
    if (listener_failed_) return walk("the JVM's attach listener would not start before");
    if (::access("/tmp", W_OK | X_OK) != 0) return walk("/tmp is not writable (the attach trigger goes there)");
    plan.may_signal = true;
  }
  plan.folder = options.net_host.empty() ? folder_of(options.output_path()) : std::string(".");
  if (plan.folder.find_first_of(" \t\"'\\") != std::string::npos) {
    return walk("the output's folder has a space or quote in its name (" + plan.folder + ")");
  }
  bool side_file = jdk >= 22;
  plan.stage = !side_file && (!options.net_host.empty() || options.gzip);
  if (side_file || plan.stage) {
    // The JVM's side file (22+) or the local one (net=, gz=y) holds the whole dump next to the
    // output, which grows by as much: the used heap stands for both (it overstates a live dump).
    struct statvfs fs{};
    if (statvfs(plan.folder.c_str(), &fs) == 0) {
      uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
      uint64_t needed = used_heap() * (options.net_host.empty() ? 2 : 1);
      if (needed > free_bytes) {
        return walk("about " + megabytes(needed) + " needed in " + plan.folder + " for the dump and its side file, " +
                    megabytes(free_bytes) + " free");
      }
    }
  }
  plan.vm = true;
  plan.why = std::string(asked) + ": the JVM's own dumper (JDK " + std::to_string(jdk) +
             (plan.may_signal ? ", attach listener to start" : ", attach socket open") +
             (plan.stage ? ", through a side file" : "") + ")";
  return plan;
}

// The phases of one VM dump: open the pipe and drain it, have the JVM write the dump into it,
// then take what came back (check, copy a staged dump, finish the rewrite, flush) and say how it
// went (verbose=y).
VmHeapDump::Outcome VmHeapDump::run(ReportContext& report, const DumperPlan& plan) {
  uint64_t started = monotonic_ns();
  context_.writer->flush();  // the report's records so far precede the dump's
  VmDumpRun dump(numbering_, *context_.sink, plan, jdk_version() >= 22);
  std::string error;
  if (!dump.open(&error) || !request(report, plan, dump, &error)) return fall_back(error);
  Outcome outcome = dump.take();
  if (outcome == Outcome::kDone && context_.options->diagnostics()) dump.print_stats(started);
  return outcome;
}

// Asks the JVM for the dump while the drain thread takes it from the pipe; CPU sampling holds
// still meanwhile (the JVM holds every Java thread at a safepoint). False: nothing was dumped.
bool VmHeapDump::request(ReportContext& report, const DumperPlan& plan, VmDumpRun& dump, std::string* error) {
  if (report.pause_background) report.pause_background();
  if (plan.may_signal && !attach_.socket_exists() && !attach_.start_listener(kListenerStartMs, error)) {
    listener_failed_ = true;
    dump.abandon_drain();
    if (report.resume_background) report.resume_background();
    return false;
  }
  dump.dump_into_pipe(attach_);
  if (report.resume_background) report.resume_background();
  return true;
}

}  // namespace fasthprof
