#include "heap/vm_heap_dump.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

#include "base/clock.h"
#include "base/stderr_line.h"
#include "hotspot_structs.h"
#include "heap_dump/heap_dump_staging.h"

namespace fasthprof {

namespace {

// How long a SIGQUIT may take to bring up the attach listener (about 20 ms when the machine is
// idle; jcmd waits some seconds too).
constexpr int kListenerStartMs = 10000;

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

// The attach reply as the dump run reads it.
DumpReply attach_reply(const AttachReply& reply) {
  DumpReply result;
  result.done = dump_succeeded(reply);
  if (!result.done) {
    result.out_of_room = reply.text.find("No space left") != std::string::npos ||
                         reply.text.find("File too large") != std::string::npos ||
                         reply.text.find("Disk quota") != std::string::npos;
    result.reason = "the JVM's dumper failed: " + reply_reason(reply);
  }
  return result;
}

}  // namespace


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

DumperPlan VmHeapDump::plan(HeapDumperChoice choice, bool at_exit, const std::function<uint64_t()>& used_heap) {
  const Options& options = *context_.options;
  DumperPlan plan;
  const char* asked = choice == HeapDumperChoice::kAuto    ? "dumper=auto"
                      : choice == HeapDumperChoice::kVm    ? "dumper=vm"
                      : choice == HeapDumperChoice::kFork  ? "dumper=fork"
                                                           : "dumper=jvmti";
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
  if (!tested && choice != HeapDumperChoice::kVm) {
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
    // The JVM's side file (22+) or the local one (net=, gz=y) holds the whole dump.
    std::string short_of_room = side_file_room(plan.folder, used_heap(), !options.net_host.empty());
    if (!short_of_room.empty()) return walk(short_of_room);
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
  HotSpotDumpRun dump(numbering_, *context_.sink, "vm", plan.folder, plan.stage, jdk_version() >= 22);
  std::string error;
  if (!dump.open(&error) || !request(report, plan, dump, &error)) return fall_back(error);
  Outcome outcome = dump.take();
  if (outcome == Outcome::kFallBack) return fall_back(dump.reason());
  if (outcome == Outcome::kDone && context_.options->diagnostics()) dump.print_stats(started, "");
  return outcome;
}

// Asks the JVM for the dump while the drain thread takes it from the pipe; CPU sampling holds
// still meanwhile (the JVM holds every Java thread at a safepoint). False: nothing was dumped.
bool VmHeapDump::request(ReportContext& report, const DumperPlan& plan, HotSpotDumpRun& dump, std::string* error) {
  if (report.pause_background) report.pause_background();
  if (plan.may_signal && !attach_.socket_exists() && !attach_.start_listener(kListenerStartMs, error)) {
    listener_failed_ = true;
    dump.abandon_drain();
    if (report.resume_background) report.resume_background();
    return false;
  }
  dump.dump_into_pipe([this](const std::string& pipe) {
    return attach_reply(attach_.jcmd("GC.heap_dump -overwrite " + pipe));
  });
  if (report.resume_background) report.resume_background();
  return true;
}

}  // namespace fasthprof
