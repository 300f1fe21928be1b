#include "heap/fork_heap_dump.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>

#include "base/clock.h"
#include "base/memory_headroom.h"
#include "base/stderr_line.h"
#include "fork_dump/fork_child.h"
#include "hotspot_structs.h"
#include "heap_dump/heap_dump_staging.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// The child's watchdog: generous (HotSpot's serial dumper writes about 0.3-0.5 GB of heap a
// second here), so that it only ends a child that hangs.
constexpr uint64_t kWatchdogBaseMs = 120000;
constexpr uint64_t kWatchdogPerGibMs = 60000;
// Memory kept for the program beyond what the child may copy.
constexpr uint64_t kReserveBytes = 64ull << 20;

// What the heap walk's first callback needs to fork, and what it found.
struct ForkRequest {
  DumpChildPlan child;
  const HotSpotDumper* dumper = nullptr;
  pid_t pid = -1;
  int fork_errno = 0;
  uint64_t forked_at = 0;
  uint64_t fork_ns = 0;
};

// On the VM thread at a safepoint (jvmti::run_at_safepoint): the fork. The parent goes on (the
// walk it runs in is aborted); the child never returns here (run_dump_child ends it). No JNI, no
// allocation, no lock but the VM's own arena lock, held across the fork.
void fork_at_safepoint(void* data) {
  auto* request = static_cast<ForkRequest*>(data);
  request->dumper->lock(request->child.lock->bytes);
  uint64_t before = monotonic_ns();
  pid_t pid = ::fork();
  if (pid == 0) run_dump_child(request->child);
  int saved = errno;
  request->forked_at = monotonic_ns();
  request->dumper->unlock(request->child.lock->bytes);
  request->fork_ns = request->forked_at - before;
  request->pid = pid;
  request->fork_errno = saved;
}

// Which heap the VM runs, or the reason a fork dump cannot serve it.
std::optional<ForkHeapKind> heap_kind(std::string* why) {
  if (hotspot_bool_flag("UseG1GC").value_or(false)) return ForkHeapKind::kG1;
  if (hotspot_bool_flag("UseParallelGC").value_or(false)) return ForkHeapKind::kParallel;
  if (hotspot_bool_flag("UseSerialGC").value_or(false)) return ForkHeapKind::kSerial;
  if (hotspot_bool_flag("UseZGC").value_or(false)) {
    *why = "ZGC (dumps by fork are built for the Serial, Parallel and G1 collectors)";
  } else if (hotspot_bool_flag("UseShenandoahGC").value_or(false)) {
    *why = "Shenandoah (dumps by fork are built for the Serial, Parallel and G1 collectors)";
  } else {
    *why = "the collector is not Serial, Parallel or G1";
  }
  return std::nullopt;
}

// Reads everything the child wrote on the status pipe (it has ended: no wait).
std::string read_status(int fd) {
  std::string text;
  char buffer[1024];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  return text;
}

// How the child ended, waited for on a thread of the reaper's; the child's own watchdog ends it,
// this wait only guards against that failing too. Without a thread to spare, waited for here.
ChildExit wait_for_child(pid_t pid, uint64_t watchdog_ms) {
  ChildExit exit;
  std::optional<ChildReaper> reaper;
  try {
    reaper.emplace(pid);
  } catch (const std::exception&) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    exit.exited = WIFEXITED(status);
    exit.status = exit.exited ? WEXITSTATUS(status) : 0;
    exit.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return exit;
  }
  if (!reaper->wait_for(watchdog_ms + 30000, &exit)) {
    reaper->kill();
    reaper->wait_for(30000, &exit);
  }
  return exit;
}

// "fasthprof: the heap dump by fork failed (...); <next> writes this dump".
DumpOutcome say_fall_back(const std::string& why) {
  write_stderr("fasthprof: the heap dump by fork failed (" + why + "); the JVM's dumper writes this dump instead\n");
  return DumpOutcome::kFallBack;
}

}  // namespace

const HotSpotDumper* ForkHeapDump::dumper(int jdk, std::string* why) {
  if (!resolved_) {
    resolved_ = true;
    std::optional<ForkHeapKind> heap = heap_kind(&unresolved_why_);
    if (heap) dumper_ = find_hotspot_dumper(jdk, *heap, &unresolved_why_);
  }
  if (!dumper_) *why = unresolved_why_;
  return dumper_ ? &*dumper_ : nullptr;
}

ForkPlan ForkHeapDump::plan(HeapDumperChoice choice, int jdk, const std::function<uint64_t()>& used_heap) {
  const Options& options = *context_.options;
  const char* asked = choice == HeapDumperChoice::kFork ? "dumper=fork" : "dumper=auto";
  ForkPlan plan;
  auto refuse = [&](const std::string& why) {
    plan.why = std::string(asked) + ": not by fork: " + why;
    return plan;
  };
  if (options.format != OutputFormat::kBinary) return refuse("format=a (HotSpot's dumper writes binary dumps only)");
  if (options.alloc_sites) return refuse("heap=all (allocation traces of objects come from the walk)");
  if (!options.primfields) return refuse("primfields=n (HotSpot's dumper writes every field)");
  if (!options.primarrays) return refuse("primarrays=n (HotSpot's dumper writes every array)");
  std::string why;
  const HotSpotDumper* found = dumper(jdk, &why);
  if (found == nullptr) return refuse(why);
  const char* root = std::getenv("FASTHPROF_MEMORY_ROOT");
  std::optional<MemoryHeadroom> headroom = read_memory_headroom(root != nullptr ? root : "/", &why);
  if (!headroom) return refuse("the memory left cannot be read: " + why);
  if (!fork_fits(*headroom, 1.0, kReserveBytes, &why)) return refuse("too little memory: " + why);
  plan.folder = options.net_host.empty() ? folder_of(options.output_path()) : std::string(".");
  // HotSpot writes the heap into a side file beside the pipe first (JDK 22+): room for it is needed.
  if (jdk >= 22) {
    std::string short_of_room = side_file_room(plan.folder, used_heap(), !options.net_host.empty());
    if (!short_of_room.empty()) return refuse(short_of_room);
  }
  plan.watchdog_ms = kWatchdogBaseMs + (headroom->resident_bytes >> 30) * kWatchdogPerGibMs;
  plan.fork = true;
  plan.why = std::string(asked) + ": by fork (JDK " + std::to_string(jdk) + ", HotSpot's dumper in the child, " +
             megabytes(headroom->resident_bytes) + " resident, " + megabytes(headroom->available_bytes) + " left by " +
             headroom->limited_by + ")";
  return plan;
}

DumpOutcome ForkHeapDump::run(ReportContext& report, const ForkPlan& plan) {
  uint64_t started = monotonic_ns();
  context_.writer->flush();  // the report's records so far precede the dump's
  HotSpotDumpRun dump(numbering_, *context_.sink, "fork", plan.folder, false, dumper_->jdk >= 22);
  std::string error;
  if (!dump.open(&error)) return say_fall_back(error);
  ForkFigures figures;
  dump.dump_into_pipe([&](const std::string& pipe) { return fork_and_wait(report, pipe, plan, &figures); });
  DumpOutcome outcome = dump.take();
  if (outcome == DumpOutcome::kFallBack) return say_fall_back(dump.reason());
  if (outcome == DumpOutcome::kDone && context_.options->diagnostics()) {
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  " pause_seconds=%.3f fork_seconds=%.3f child_seconds=%.3f child_extra_bytes=%lld child_pid=%d",
                  figures.pause_seconds, figures.fork_seconds, figures.child_seconds,
                  static_cast<long long>(figures.child_private_bytes), figures.child_pid);
    dump.print_stats(started, extra);
  }
  return outcome;
}

// The fork, at a safepoint of the heap walk's, and the child's end: a reply for the dump run.
DumpReply ForkHeapDump::fork_and_wait(ReportContext& report, const std::string& pipe, const ForkPlan& plan,
                                      ForkFigures* figures) {
  DumpReply reply;
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) {
    reply.reason = std::string("cannot make the status pipe: ") + std::strerror(errno);
    return reply;
  }
  HotSpotLockStorage lock;
  ForkRequest request;
  request.dumper = &*dumper_;
  request.child.dumper = &*dumper_;
  request.child.path = pipe.c_str();
  request.child.status_fd = status[1];
  request.child.watchdog_ms = plan.watchdog_ms;
  request.child.lock = &lock;
  if (report.pause_background) report.pause_background();
  uint64_t before = monotonic_ns();
  bool called = false;
  jvmtiError walked = jvmti::run_at_safepoint(context_.jvmti, &fork_at_safepoint, &request, &called);
  figures->pause_seconds = seconds_since(before);
  if (report.resume_background) report.resume_background();
  ::close(status[1]);
  if (request.pid <= 0) {
    ::close(status[0]);
    if (walked != JVMTI_ERROR_NONE) {
      reply.reason = "the heap walk that forks failed: " + jvmti::error_name(walked);
    } else if (!called) {
      reply.reason = "the heap walk made no callback to fork in";
    } else {
      reply.reason = std::string("fork() failed: ") + std::strerror(request.fork_errno);
    }
    return reply;
  }
  figures->fork_seconds = static_cast<double>(request.fork_ns) / 1e9;
  figures->child_pid = request.pid;
  ChildExit exit = wait_for_child(request.pid, plan.watchdog_ms);
  figures->child_seconds = seconds_since(request.forked_at);
  DumpChildStatus said = parse_dump_child_status(read_status(status[0]));
  ::close(status[0]);
  figures->child_private_bytes = said.private_bytes;
  if (exit.exited && exit.status == 0 && said.ok) {
    reply.done = true;
    return reply;
  }
  std::string how = "the dump's child (pid " + std::to_string(request.pid) + ") " + exit.describe();
  if (!exit.exited && exit.signal == SIGKILL) {
    how += " (its " + std::to_string(plan.watchdog_ms / 1000) + " s watchdog, or the kernel's OOM killer)";
  }
  if (!said.ok && !said.error.empty() && said.error != "the child ended without saying how") how += ": " + said.error;
  reply.reason = how;
  reply.out_of_room = said.error.find("No space left") != std::string::npos ||
                      said.error.find("Disk quota") != std::string::npos;
  return reply;
}

}  // namespace fasthprof
