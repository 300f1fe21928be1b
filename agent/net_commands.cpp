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

#include "allocation_tracker.h"
#include "cpu_timer.h"
#include "entry_guard.h"
#include "jvmti_support.h"
#include "profile_owner.h"
#include "profiler.h"
#include "stderr_line.h"

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

void Profiler::run_command(JNIEnv* jni, const NetCommand& command) {
  if (failed_.load()) return;
  auto refuse = [&](const std::string& why) { say("command (" + describe(command) + "): " + why + "; ignored"); };
  bool changes_state = command.tag == NetCommandTag::kGc || command.tag == NetCommandTag::kControl;
  if (changes_state && options_.net_commands == Options::NetCommands::kReports) {
    refuse("commands=reports obeys only the commands that write output");
    return;
  }
  auto index_of = [&](Feature* feature) {
    for (size_t i = 0; i < features_.size(); ++i) {
      if (features_[i].get() == feature) return feature_failed_[i] ? features_.size() : i;
    }
    return features_.size();
  };
  Feature* sites = allocation_hook_;
  ReportContext report{jni, /*at_exit=*/false};
  report.pause_background = [this] {
    for (auto& feature : features_) feature->pause_background();
  };
  report.resume_background = [this] {
    for (auto& feature : features_) feature->resume_background();
  };
  Feature* section = nullptr;  // the feature whose section the command writes
  switch (command.tag) {
    case NetCommandTag::kGc:
      jvmti_->ForceGarbageCollection();
      return;
    case NetCommandTag::kDumpHeap:
      if (heap_dump_feature_ == nullptr) return refuse("the heap dump needs heap=dump or heap=all");
      section = heap_dump_feature_;
      break;
    case NetCommandTag::kAllocSites:
      if (sites == nullptr) return refuse("allocation sites need heap=sites or heap=all");
      report.sites_flags = command.flags;
      report.cutoff = command.cutoff;
      report.force_gc = (command.flags & kSitesForceGc) != 0;
      section = sites;
      break;
    case NetCommandTag::kHeapSummary:
      if (sites == nullptr) return refuse("HEAP SUMMARY needs heap=sites or heap=all");
      if (options_.format != OutputFormat::kBinary) return refuse("HEAP SUMMARY is a binary record (format=b)");
      report.heap_summary_only = true;
      section = sites;
      break;
    case NetCommandTag::kCpuSamples:
      // As the original: the CPU SAMPLES section with cpu=samples, else cpu=times' CPU TIME (ms)
      // (cpu=old: its prof table).
      if (cpu_samples_feature_ == nullptr && cpu_timer_ == nullptr) {
        return refuse("CPU SAMPLES need cpu=samples or cpu=times");
      }
      report.cutoff = command.cutoff;
      section = cpu_samples_feature_ != nullptr ? cpu_samples_feature_ : cpu_timer_;
      break;
    case NetCommandTag::kDumpTraces:
    case NetCommandTag::kExit:  // the listener's; never queued
      break;
    case NetCommandTag::kControl: {
      Feature* owner = nullptr;
      switch (command.control) {
        case NetControl::kAllocOn:
        case NetControl::kAllocOff:
        case NetControl::kResetSites:
          if (sites == nullptr) return refuse("allocation tracking needs heap=sites or heap=all");
          owner = sites;
          break;
        case NetControl::kSamplingOn:
        case NetControl::kSamplingOff:
          if (cpu_samples_feature_ == nullptr) return refuse("sampling needs cpu=samples");
          if (command.thread_id != 0) {
            apply_lifecycle(jni);  // a thread just started may still be queued
            if (writer_->threads().find_by_object_id(command.thread_id) == nullptr) {
              return refuse("thread object ID " + std::to_string(command.thread_id) +
                            " names no thread of this output");
            }
          }
          owner = cpu_samples_feature_;
          break;
        case NetControl::kClearCpu: {
          if (cpu_samples_feature_ == nullptr && cpu_timer_ == nullptr) {
            return refuse("CPU costs need cpu=samples or cpu=times");
          }
          drain_all(jni);  // what was counted before the command is cleared with the rest
          // The original kept both in one trace table: the command cleared both.
          for (Feature* feature : {cpu_samples_feature_, static_cast<Feature*>(cpu_timer_)}) {
            if (feature == nullptr) continue;
            if (index_of(feature) == features_.size()) return refuse("that feature has stopped after an error");
            std::string refusal;
            if (!feature->control(jni, command, &refusal)) refuse(refusal);
          }
          return;
        }
        case NetControl::kSetDepth: {
          int capacity = context_.depth_capacity;
          if (options_.depth <= 0) return refuse("depth=0 at start turns stack traces off for the whole run");
          if (command.depth == 0) return refuse("depth 0 is only for depth= at start (no stack traces at all)");
          if (command.depth > capacity) {
            return refuse("depth " + std::to_string(command.depth) + " is above " + std::to_string(capacity) +
                          ", the deepest the agent's stack buffers hold (depth= at start, at least " +
                          std::to_string(kCommandDepthCapacity) + " with net= commands)");
          }
          // What was captured at the old depth is interned at it; traces from here on are cut to
          // the new one (the STACK TRACE records already written stay as they are).
          drain_all(jni);
          writer_->set_trace_depth(command.depth);
          trace_depth_.store(command.depth, std::memory_order_relaxed);
          return;
        }
      }
      if (index_of(owner) == features_.size()) return refuse("that feature has stopped after an error");
      std::string refusal;
      if (!owner->control(jni, command, &refusal)) refuse(refusal);
      return;
    }
  }
  size_t index = section == nullptr ? features_.size() : index_of(section);
  if (section != nullptr && index == features_.size()) return refuse("that feature has stopped after an error");

  // A small report: the barrier, the one section (or the TRACEs), every record whole, flushed.
  for (auto& feature : features_) feature->settle_background();
  drain_all(jni);
  next_report();
  classes_.record_unloaded_classes(jni);
  if (section == nullptr) {
    writer_->write_unwritten_traces();
  } else {
    guard_entry(
        "a net= command's section", "that section is left out of later reports too",
        [&] { section->write_report(report); },
        [&] {
          feature_failed_[index] = true;
          writer_->flush();
          sink_->abandon_report("the command's output was left out: its section failed");
        });
  }
  next_report();
}

}  // namespace fasthprof
