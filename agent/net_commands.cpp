// net= commands (docs/net.md, docs/ARCHITECTURE.md): the listener thread and the writer's
// side of each command. The listener only reads, parses and queues; every command that writes
// output runs on the writer thread, the profile's owner, between rounds and behind the kill -QUIT
// reports queued before it, bracketed like a report so that the output is cut back only to
// complete reports. EXIT is the listener's own: it waits until the commands before it have run and
// calls System.exit(0), so that VMDeath and the final report run as at any exit (the writer, which
// VMDeath waits for, must never be the thread that exits).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "base/stderr_line.h"
#include "entry_guard.h"
#include "jvmti_support.h"
#include "profile_owner.h"
#include "profiler.h"

namespace fasthprof {

namespace {

// The deepest stack a net= CONTROL may ask for when depth= at start was less: the agent's stack
// buffers (each allocation-tracking thread's, the CPU sampler's signal slots) are sized for it
// from the start, so that the depth can change while the program's threads use them, with no
// handshake. Walks take only the frames of the depth asked for, so a larger capacity costs memory
// (1 KiB per tracking thread; the sampler's slots fit its fixed 4 MiB), not time (docs/net.md).
constexpr int kCommandDepthCapacity = 64;

std::string describe(const NetCommand& command) {
  return net_command_name(static_cast<uint8_t>(command.tag)) + ", serial " + std::to_string(command.serial);
}

void say(const std::string& text) { write_stderr("fasthprof: net= " + text + "\n"); }

// One line saying why a command is not obeyed; the agent goes on.
void refuse(const NetCommand& command, const std::string& why) {
  say("command (" + describe(command) + "): " + why + "; ignored");
}

}  // namespace

int Profiler::depth_capacity() const {
  // depth=0 turns stack traces off for good (the features that need stacks do not start).
  bool may_change = !options_.net_host.empty() && options_.net_commands != Options::NetCommands::kReports;
  if (!may_change || options_.depth <= 0) return options_.depth;
  return std::max(options_.depth, kCommandDepthCapacity);
}

void Profiler::start_command_listener(JNIEnv* jni) {
  if (command_fd_ < 0) return;
  std::string error;
  if (!jvmti::start_agent_thread(jvmti_, jni, "fasthprof commands", &listener_main, this, &error)) {
    jvmti::print_error(error + "; net= commands are not read");
    ::close(command_fd_);
    command_fd_ = -1;
  }
}

void JNICALL Profiler::listener_main(jvmtiEnv*, JNIEnv* jni, void* arg) {
  auto* self = static_cast<Profiler*>(arg);
  guard_entry("the net= command listener", "net= commands are not read any more", [&] { self->listen(jni); },
              [] {});
  ::close(self->command_fd_);
}

void Profiler::listen(JNIEnv* jni) {
  NetCommandParser parser;
  std::vector<NetCommand> commands;
  std::vector<std::string> messages;
  uint8_t buffer[4096];
  bool queue_closed = false;
  for (;;) {
    // Blocks with no lock held. Ends when the peer closes, and at VM death, when the sink's close
    // shuts the connection down.
    ssize_t got = ::recv(command_fd_, buffer, sizeof(buffer), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      parser.finish(&messages);
      for (const std::string& message : messages) say(message);
      return;
    }
    // Past an out-of-step length the parser drops everything; reading on (rather than stopping)
    // keeps a peer that goes on sending from blocking, and still sees the close.
    parser.feed(buffer, static_cast<size_t>(got), &commands, &messages);
    for (const std::string& message : messages) say(message);
    messages.clear();
    for (const NetCommand& command : commands) {
      if (queue_closed) break;
      if (command.tag == NetCommandTag::kExit) {
        if (options_.net_commands != Options::NetCommands::kAll) {
          say("command (" + describe(command) + "): EXIT is not obeyed with commands=" +
              (options_.net_commands == Options::NetCommands::kNoExit ? "noexit" : "reports") + "; ignored");
          continue;
        }
        exit_on_command(jni);
        continue;
      }
      if (!writer_thread_.queue_command(command)) {
        say("the writer thread has ended: no more commands are run");
        queue_closed = true;
      }
    }
    commands.clear();
  }
}

void Profiler::exit_on_command(JNIEnv* jni) {
  // The commands sent before EXIT run first (their output is what the peer asked for).
  if (!writer_thread_.wait_for_queued_commands()) return;  // the VM is dying meanwhile
  write_stderr("HPROF: received exit event, exiting ...\n");
  jclass system = jni->FindClass("java/lang/System");
  jmethodID exit = system == nullptr ? nullptr : jni->GetStaticMethodID(system, "exit", "(I)V");
  if (exit != nullptr) jni->CallStaticVoidMethod(system, exit, 0);
  // Only reached when System.exit threw (or is refused): the program runs on.
  if (jni->ExceptionCheck()) jni->ExceptionClear();
  say("EXIT: System.exit(0) did not exit; the program runs on");
}

FeatureSlot* Profiler::serving(bool FeatureCommands::*command) {
  for (FeatureSlot& slot : features_) {
    if (slot.commands.*command) return &slot;
  }
  return nullptr;
}

void Profiler::run_command(JNIEnv* jni, const NetCommand& command) {
  if (failed_.load()) return;
  bool changes_state = command.tag == NetCommandTag::kGc || command.tag == NetCommandTag::kControl;
  if (changes_state && options_.net_commands == Options::NetCommands::kReports) {
    return refuse(command, "commands=reports obeys only the commands that write output");
  }
  ReportContext report{jni, /*at_exit=*/false};
  FeatureSlot* section = nullptr;  // the feature whose section the command writes; none: TRACEs
  const char* needs = nullptr;     // the refusal when no feature serves the command
  switch (command.tag) {
    case NetCommandTag::kGc:
      jvmti_->ForceGarbageCollection();
      return;
    case NetCommandTag::kControl:
      return run_control(jni, command);
    case NetCommandTag::kDumpTraces:
    case NetCommandTag::kExit:  // the listener's; never queued
      break;
    case NetCommandTag::kDumpHeap:
      section = serving(&FeatureCommands::dump_heap);
      needs = "the heap dump needs heap=dump or heap=all";
      break;
    case NetCommandTag::kAllocSites:
      section = serving(&FeatureCommands::alloc_sites);
      needs = "allocation sites need heap=sites or heap=all";
      report.sites_flags = command.flags;
      report.cutoff = command.cutoff;
      report.force_gc = (command.flags & kSitesForceGc) != 0;
      break;
    case NetCommandTag::kHeapSummary:
      section = serving(&FeatureCommands::alloc_sites);
      needs = "HEAP SUMMARY needs heap=sites or heap=all";
      if (section != nullptr && options_.format != OutputFormat::kBinary) {
        return refuse(command, "HEAP SUMMARY is a binary record (format=b)");
      }
      report.heap_summary_only = true;
      break;
    case NetCommandTag::kCpuSamples:
      // As the original: the CPU SAMPLES section with cpu=samples, else cpu=times' CPU TIME (ms)
      // (cpu=old: its prof table); the sampler comes first in report order.
      section = serving(&FeatureCommands::cpu_samples);
      needs = "CPU SAMPLES need cpu=samples or cpu=times";
      report.cutoff = command.cutoff;
      break;
  }
  if (needs != nullptr && section == nullptr) return refuse(command, needs);
  if (section != nullptr && section->failed) return refuse(command, "that feature has stopped after an error");
  write_command_section(jni, section, report);
}

void Profiler::write_command_section(JNIEnv* jni, FeatureSlot* slot, ReportContext& report) {
  report.pause_background = [this] {
    for (auto& feature : features_) feature->pause_background();
  };
  report.resume_background = [this] {
    for (auto& feature : features_) feature->resume_background();
  };
  // A small report: the barrier, the one section (or the TRACEs), every record whole, flushed.
  for (auto& feature : features_) feature->settle_background();
  drain_all(jni);
  next_report();
  classes_.record_unloaded_classes(jni);
  if (slot == nullptr) {
    writer_->write_unwritten_traces();
  } else {
    guard_entry(
        "a net= command's section", "that section is left out of later reports too",
        [&] { (*slot)->write_report(report); },
        [&] {
          slot->failed = true;
          writer_->flush();
          sink_->abandon_report("the command's output was left out: its section failed");
        });
  }
  next_report();
}

void Profiler::run_control(JNIEnv* jni, const NetCommand& command) {
  FeatureSlot* owner = nullptr;
  switch (command.control) {
    case NetControl::kAllocOn:
    case NetControl::kAllocOff:
    case NetControl::kResetSites:
      owner = serving(&FeatureCommands::alloc_sites);
      if (owner == nullptr) return refuse(command, "allocation tracking needs heap=sites or heap=all");
      break;
    case NetControl::kSamplingOn:
    case NetControl::kSamplingOff:
      owner = serving(&FeatureCommands::sampling_control);
      if (owner == nullptr) return refuse(command, "sampling needs cpu=samples");
      if (command.thread_id != 0) {
        apply_lifecycle(jni);  // a thread just started may still be queued
        if (writer_->threads().find_by_object_id(command.thread_id) == nullptr) {
          return refuse(command, "thread object ID " + std::to_string(command.thread_id) + " names no thread of this output");
        }
      }
      break;
    case NetControl::kClearCpu:
      return clear_cpu(jni, command);
    case NetControl::kSetDepth:
      return set_depth(jni, command);
  }
  if (owner->failed) return refuse(command, "that feature has stopped after an error");
  std::string refusal;
  if (!(*owner)->control(jni, command, &refusal)) refuse(command, refusal);
}

void Profiler::clear_cpu(JNIEnv* jni, const NetCommand& command) {
  if (serving(&FeatureCommands::clear_cpu) == nullptr) return refuse(command, "CPU costs need cpu=samples or cpu=times");
  drain_all(jni);  // what was counted before the command is cleared with the rest
  // The original kept samples and times in one trace table: the command clears both.
  for (FeatureSlot& slot : features_) {
    if (!slot.commands.clear_cpu) continue;
    if (slot.failed) return refuse(command, "that feature has stopped after an error");
    std::string refusal;
    if (!slot->control(jni, command, &refusal)) refuse(command, refusal);
  }
}

void Profiler::set_depth(JNIEnv* jni, const NetCommand& command) {
  int capacity = context_.depth_capacity;
  if (options_.depth <= 0) return refuse(command, "depth=0 at start turns stack traces off for the whole run");
  if (command.depth == 0) return refuse(command, "depth 0 is only for depth= at start (no stack traces at all)");
  if (command.depth > capacity) {
    return refuse(command, "depth " + std::to_string(command.depth) + " is above " + std::to_string(capacity) +
                  ", the deepest the agent's stack buffers hold (depth= at start, at least " +
                  std::to_string(kCommandDepthCapacity) + " with net= commands)");
  }
  // What was captured at the old depth is interned at it; traces from here on are cut to the new
  // one (the STACK TRACE records already written stay as they are).
  drain_all(jni);
  writer_->set_trace_depth(command.depth);
  trace_depth_.store(command.depth, std::memory_order_relaxed);
}

}  // namespace fasthprof
