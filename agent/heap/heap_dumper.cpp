#include "heap/heap_dumper.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/stderr_line.h"
#include "class_tracker.h"
#include "heap/class_linker.h"
#include "heap/heap_class_layouts.h"
#include "heap/heap_walk.h"
#include "heap/marked_object_tags.h"
#include "heap_dump/heap_dump_assembler.h"
#include "heap_dump/heap_dump_section.h"
#include "heap_dump/heap_dump_staging.h"
#include "jvmti_support.h"
#include "thread_tracker.h"

namespace fasthprof {


namespace {

// The heap's committed bytes (Runtime.totalMemory()) and those it holds now (less freeMemory()),
// 0 if unknown.
struct HeapBytes {
  uint64_t committed = 0, used = 0;
};

HeapBytes heap_bytes(JNIEnv* jni) {
  // Every call below may leave an exception, which must be looked at before the next JNI call.
  auto failed = [jni] { return jvmti::clear_exception(jni); };
  jvmti::LocalFrame frame(jni, 4);
  jclass runtime_class = jni->FindClass("java/lang/Runtime");
  if (failed() || runtime_class == nullptr) return {};
  jmethodID get_runtime = jni->GetStaticMethodID(runtime_class, "getRuntime", "()Ljava/lang/Runtime;");
  if (failed() || get_runtime == nullptr) return {};
  jmethodID total = jni->GetMethodID(runtime_class, "totalMemory", "()J");
  if (failed() || total == nullptr) return {};
  jmethodID free = jni->GetMethodID(runtime_class, "freeMemory", "()J");
  if (failed() || free == nullptr) return {};
  jobject runtime = jni->CallStaticObjectMethod(runtime_class, get_runtime);
  if (failed() || runtime == nullptr) return {};
  jlong t = jni->CallLongMethod(runtime, total);
  if (failed()) return {};
  jlong f = jni->CallLongMethod(runtime, free);
  if (failed()) return {};
  return HeapBytes{static_cast<uint64_t>(std::max<jlong>(t, 0)), t > f ? static_cast<uint64_t>(t - f) : 0};
}

uint64_t used_heap_bytes(JNIEnv* jni) { return heap_bytes(jni).used; }

// docs/decisions.md: warn before a dump that will probably not fit. A binary dump takes about 1.5
// times the live heap (8-byte IDs); the used heap overstates the live one, so this errs on the
// side of warning.
void warn_if_disk_small(JNIEnv* jni, const Options& options) {
  if (!options.net_host.empty()) return;
  std::string folder = folder_of(options.output_path());
  struct statvfs fs{};
  if (statvfs(folder.c_str(), &fs) != 0) return;
  uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  uint64_t needed = used_heap_bytes(jni) / 2 * 3;
  if (needed <= free_bytes) return;
  write_stderr("fasthprof: warning: the heap dump may need about " + std::to_string(needed >> 20) +
               " MB but only " + std::to_string(free_bytes >> 20) + " MB are free in " + folder + "\n");
}

bool is_agent_thread(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  auto jni_delete = [jni](jobject reference) { jni->DeleteLocalRef(reference); };
  jvmtiThreadInfo info{};
  if (jvmti->GetThreadInfo(thread, &info) != JVMTI_ERROR_NONE) return false;
  bool agent = info.name != nullptr && std::strncmp(info.name, "fasthprof", 9) == 0;
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(info.name));
  if (info.thread_group != nullptr) jni_delete(info.thread_group);
  if (info.context_class_loader != nullptr) jni_delete(info.context_class_loader);
  return agent;
}

// The threads of one dump: suspended from before their stacks are taken until after the walk,
// and the CPU sampler held still for as long (report.pause_background).
class HeldThreads {
 public:
  HeldThreads(jvmtiEnv* jvmti, ReportContext& report) : jvmti_(jvmti), jni_(report.jni), report_(report) {}
  ~HeldThreads() { release(); }

  // Registers every live thread (THREAD START for those not yet seen) and suspends the
  // application's.
  void hold(ThreadTracker& tracker) {
    if (report_.pause_background) report_.pause_background();
    background_paused_ = true;
    jint count = 0;
    jthread* threads = nullptr;
    if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return;
    // They stay until release(), in a frame planned for them that every JNI call of the dump runs
    // above (a few references of hold()'s own besides).
    frame_.emplace(jni_, count + 4);
    jthread self = nullptr;
    jvmti_->GetCurrentThread(&self);
    std::vector<jthread> to_suspend;
    for (jint i = 0; i < count; ++i) {
      tracker.announce(jni_, threads[i]);
      threads_.push_back(threads[i]);
      bool is_self = self != nullptr && jni_->IsSameObject(self, threads[i]);
      if (!is_self && !is_agent_thread(jvmti_, jni_, threads[i])) to_suspend.push_back(threads[i]);
    }
    if (self != nullptr) jni_->DeleteLocalRef(self);
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(threads));
    if (to_suspend.empty()) return;
    std::vector<jvmtiError> results(to_suspend.size());
    jvmti_->SuspendThreadList(static_cast<jint>(to_suspend.size()), to_suspend.data(), results.data());
    for (size_t i = 0; i < to_suspend.size(); ++i) {
      if (results[i] == JVMTI_ERROR_NONE) suspended_.push_back(to_suspend[i]);
    }
    suspended_count_ = suspended_.size();
  }

  // Interns each thread's full stack as its dump trace and writes the TRACE (with its FRAMEs).
  void take_stacks(ProfileWriter& writer, std::unordered_map<uint64_t, DumpThread>* out) {
    std::vector<jvmtiFrameInfo> frames;
    std::vector<uint64_t> frame_ids;
    for (jthread thread : threads_) {
      jlong tag = 0;
      if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || tag == 0) continue;
      const ThreadInfo* info = writer.threads().find_by_object_id(static_cast<uint64_t>(tag));
      if (info == nullptr) continue;  // only live threads are known
      jint depth = 0;
      if (jvmti_->GetFrameCount(thread, &depth) != JVMTI_ERROR_NONE) continue;
      frames.resize(static_cast<size_t>(depth) + 1);
      jint taken = 0;
      if (jvmti_->GetStackTrace(thread, 0, depth, frames.data(), &taken) != JVMTI_ERROR_NONE) taken = 0;
      frame_ids.clear();
      for (jint i = 0; i < taken; ++i) {
        frame_ids.push_back(writer.frames()
                                .intern(reinterpret_cast<uint64_t>(frames[i].method),
                                        static_cast<int64_t>(frames[i].location))
                                .frame_id);
      }
      uint32_t trace = writer.traces().intern(info->serial, frame_ids).serial;
      writer.write_trace(trace);
      (*out)[static_cast<uint64_t>(tag)] = DumpThread{info->serial, trace, taken};
    }
  }

  void release() {
    if (!suspended_.empty()) {
      std::vector<jvmtiError> results(suspended_.size());
      jvmti_->ResumeThreadList(static_cast<jint>(suspended_.size()), suspended_.data(), results.data());
      suspended_.clear();
    }
    for (jthread thread : threads_) jni_->DeleteLocalRef(thread);
    threads_.clear();
    frame_.reset();
    if (background_paused_ && report_.resume_background) report_.resume_background();
    background_paused_ = false;
  }

  size_t suspended() const { return suspended_count_; }

 private:
  jvmtiEnv* jvmti_;
  JNIEnv* jni_;
  std::optional<jvmti::LocalFrame> frame_;
  std::vector<jthread> threads_;
  std::vector<jthread> suspended_;
  size_t suspended_count_ = 0;
  ReportContext& report_;
  bool background_paused_ = false;
};

// A dump by the JVMTI heap walk, in its named phases (HeapDumper::write_report runs them in order).
// Its statistics are gathered as it goes and printed in one line at the end (verbose=y).
class WalkDump {
 public:
  WalkDump(const AgentContext& context, AllocationTraces* allocation_traces, ReportContext& report)
      : context_(context),
        options_(*context.options),
        writer_(*context.writer),
        jvmti_(context.jvmti),
        jni_(report.jni),
        report_(report),
        allocation_traces_(allocation_traces),
        held_(context.jvmti, report) {}

  ~WalkDump() { release_class_collection(jni_, &collection_); }

  // Holds the program: links the classes not linked yet (so that their fields are dumped),
  // suspends every application thread, applies the queued events and, with heap=all, writes the
  // allocation traces that objects will name; takes each thread's stack.
  void hold();
  // Describes every loaded class (layouts, CLASS DUMP data). False when they cannot be (said).
  bool collect_classes();
  // heap=all counted by injection: the objects whose header names their allocation site tagged
  // for the walk (marked_object_tags.h). Last before write(): nothing allocates in between.
  void tag_marked_objects();
  // The roots, the walk and the objects; the threads are let go when the walk ends.
  void write();
  // Warnings, the heap-dump tags cleared, and the statistics line (verbose=y).
  void finish();

 private:
  HeapWalkSetup walk_setup();
  void print_stats(uint64_t cleared, double clear_seconds) const;

  const AgentContext& context_;
  const Options& options_;
  ProfileWriter& writer_;
  jvmtiEnv* jvmti_;
  JNIEnv* jni_;
  ReportContext& report_;
  AllocationTraces* allocation_traces_;
  HeldThreads held_;
  uint64_t started_ = monotonic_ns();
  ClassLinkResult linking_;
  double link_seconds_ = 0;
  std::unordered_map<uint64_t, DumpThread> threads_;
  ClassLayoutTable classes_;
  ClassCollection collection_;
  double classes_seconds_ = 0;
  HeapWalkResult walk_;
  HeapDumpCounts counts_;
  MarkedObjectTags marked_;
  bool marked_used_ = false;
};

void WalkDump::hold() {
  warn_if_disk_small(jni_, options_);
  uint64_t link_started = monotonic_ns();
  linking_ = link_unprepared_classes(jvmti_, jni_);
  link_seconds_ = seconds_since(link_started);
  if (!linking_.error.empty()) {
    write_stderr("fasthprof: warning: classes that are not linked yet are dumped without fields: " + linking_.error +
                 "\n");
  } else if (linking_.failed != 0) {
    write_stderr("fasthprof: warning: " + std::to_string(linking_.failed) +
                 " classes could not be linked and are dumped without fields (first: " + linking_.first_failure +
                 ")\n");
  }
  held_.hold(*context_.threads);
  // Every thread and class event queued up to here is applied; with the program's threads held,
  // no allocation is made until the walk is over: heap=all interns every one queued and writes
  // its TRACE now, so that objects tagged by allocation tracking name their allocation trace
  // (looked up from the tag during the walk).
  context_.apply_lifecycle(jni_);
  if (allocation_traces_ != nullptr) allocation_traces_->intern_pending(report_);
  if (allocation_traces_ != nullptr && allocation_traces_->marks_objects()) {
    marked_.prepare(jvmti_, report_, *allocation_traces_, heap_bytes(jni_).committed);
  }
  writer_.write_unwritten_traces();
  held_.take_stacks(writer_, &threads_);
}

bool WalkDump::collect_classes() {
  uint64_t classes_started = monotonic_ns();
  if (!fasthprof::collect_classes(jvmti_, jni_, writer_, *context_.classes, options_.primfields, &next_heap_dump_id,
                                  &classes_, &collection_)) {
    held_.release();
    write_stderr("fasthprof: the heap dump failed: the loaded classes could not be described\n");
    return false;
  }
  classes_seconds_ = seconds_since(classes_started);
  return true;
}

void WalkDump::tag_marked_objects() {
  if (allocation_traces_ == nullptr || !allocation_traces_->marks_objects()) return;
  std::string why;
  marked_used_ = marked_.tag(jvmti_, *allocation_traces_, &why);
  if (!marked_used_) {
    write_stderr("fasthprof: warning: this heap dump names no allocation trace for the objects counted by "
                 "injection: " + why + "\n");
  }
}

HeapWalkSetup WalkDump::walk_setup() {
  HeapWalkSetup setup;
  setup.classes = &classes_;
  setup.class_class_id = collection_.class_class_id;
  setup.holder_id = collection_.class_field_holder_id;
  setup.threads = &threads_;
  setup.allocation_traces = allocation_traces_;
  if (marked_used_) setup.marked_tags = &marked_;
  setup.primitive_fields = options_.primfields;
  setup.primitive_arrays = options_.primarrays;
  return setup;
}

// The roots, then the walk, into the section of the file's format (heap_dump_section.h). Threads
// in serial order, so that the file is stable for a stable program.
void WalkDump::write() {
  std::vector<std::pair<uint64_t, DumpThread>> ordered(threads_.begin(), threads_.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second.serial < b.second.serial; });
  std::string error;
  std::string staging_folder = options_.net_host.empty() ? folder_of(options_.output_path()) : std::string();
  std::unique_ptr<HeapDumpSection> section =
      HeapDumpSection::make(writer_.output(), *context_.sink, staging_folder, &error);
  if (!section) {
    held_.release();
    write_stderr("fasthprof: the heap dump failed: " + error + "\n");
    return;
  }
  HeapDumpAssembler assembler(classes_, section->output(), collection_.object_class_id,
                              collection_.class_class_id, options_.primfields);
  HeapWalkSetup setup = walk_setup();
  setup.text = section->needs_sizes();
  setup.assembler = &assembler;
  setup.bytes_written = [&section] { return section->bytes_written(); };
  section->begin(assembler);
  for (const auto& [id, thread] : ordered) assembler.root_thread(id, thread.serial, thread.trace_serial);
  walk_ = run_heap_walk(jvmti_, setup);
  held_.release();
  section->end(assembler);
  counts_ = assembler.counts();
  section->finish(counts_, walk_.failed);
}

void WalkDump::finish() {
  release_class_collection(jni_, &collection_);
  if (counts_.dropped_elements != 0) {
    write_stderr("fasthprof: warning: " + std::to_string(counts_.dropped_elements) +
                 " object-array elements came out of order or past their array's end and were written as null\n");
  }
  if (walk_.error != JVMTI_ERROR_NONE) {
    write_stderr("fasthprof: the heap walk failed (" + jvmti::error_name(walk_.error) +
                 "); the dump holds what was written before\n");
  }
  writer_.flush();
  uint64_t cleared = 0;
  double clear_seconds = clear_heap_dump_tags(jvmti_, &cleared);
  if (options_.diagnostics()) print_stats(cleared, clear_seconds);
}

// One line of key=value figures (verbose=y), for the benchmarks and for a user's question of
// where a dump's time went.
void WalkDump::print_stats(uint64_t cleared, double clear_seconds) const {
  using ull = unsigned long long;
  char line[640];
  std::snprintf(line, sizeof line,
                "fasthprof: heap dump stats: seconds=%.3f link_seconds=%.3f classes_linked=%llu classes_seconds=%.3f "
                "walk_seconds=%.3f objects=%llu instances=%llu "
                "object_arrays=%llu primitive_arrays=%llu classes=%llu roots=%llu class_instances=%llu "
                "unknown_class_objects=%llu class_field_objects=%llu threads=%zu suspended=%zu "
                "peak_pending=%zu tags_cleared=%llu clear_seconds=%.3f marked_objects=%llu marked_tagged=%llu "
                "marked_seconds=%.3f\n",
                seconds_since(started_), link_seconds_, static_cast<ull>(linking_.linked), classes_seconds_,
                walk_.seconds, static_cast<ull>(counts_.objects()), static_cast<ull>(counts_.instances),
                static_cast<ull>(counts_.object_arrays), static_cast<ull>(counts_.primitive_arrays),
                static_cast<ull>(counts_.class_dumps), static_cast<ull>(counts_.roots),
                static_cast<ull>(walk_.class_instances), static_cast<ull>(counts_.unknown_classes),
                static_cast<ull>(collection_.class_field_objects), threads_.size(), held_.suspended(),
                walk_.peak_pending, static_cast<ull>(cleared), clear_seconds, static_cast<ull>(marked_.objects()),
                static_cast<ull>(marked_.tagged()), marked_.seconds());
  write_stderr(line);
}

}  // namespace

void HeapDumper::add_capabilities(jvmtiCapabilities* wanted) {
  wanted->can_tag_objects = 1;
  wanted->can_suspend = 1;
}

// The phases of one heap dump: choose the dumper (HotSpot's own where it runs, vm_heap_dump.h),
// else by the JVMTI walk: hold the program, describe the classes, write (the walk), finish.
void HeapDumper::write_report(ReportContext& report) {
  if (dump_by_hotspot(report)) return;
  WalkDump dump(context_, allocation_traces_, report);
  dump.hold();
  if (!dump.collect_classes()) return;
  dump.tag_marked_objects();
  dump.write();
  dump.finish();
}

// Which dumper, said on a line of its own (the report's verbose line comes whole at its end): by
// fork, else through attach, as dumper= asks and the guards allow. True when one of them wrote the
// dump (or failed after writing, without a fallback).
bool HeapDumper::dump_by_hotspot(ReportContext& report) {
  JNIEnv* jni = report.jni;
  const Options& options = *context_.options;
  HeapDumperChoice choice = options.dumpers[reports_++ % options.dumpers.size()];
  auto used_heap = [jni] { return used_heap_bytes(jni); };
  if (choice == HeapDumperChoice::kFork || choice == HeapDumperChoice::kAuto) {
    ForkPlan fork = fork_dump_.plan(choice, vm_dump_.jdk_version(), used_heap);
    if (choice == HeapDumperChoice::kFork && !fork.fork) {
      write_stderr("fasthprof: " + fork.why + "; the JVM's dumper writes this dump instead\n");
    } else if (options.diagnostics()) {
      write_stderr("fasthprof: heap dump: " + fork.why + "\n");
    }
    if (fork.fork && fork_dump_.run(report, fork) != DumpOutcome::kFallBack) return true;
  }
  DumperPlan plan = vm_dump_.plan(choice, report.at_exit, used_heap);
  if (options.diagnostics()) write_stderr("fasthprof: heap dump: " + plan.why + "\n");
  return plan.vm && vm_dump_.run(report, plan) != VmHeapDump::Outcome::kFallBack;
}

}  // namespace fasthprof
