#include "heap_dumper.h"

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

#include "clock.h"
#include "class_linker.h"
#include "class_tracker.h"
#include "heap_class_layouts.h"
#include "heap_dump_assembler.h"
#include "heap_dump_staging.h"
#include "heap_walk.h"
#include "jvmti_support.h"
#include "stderr_line.h"
#include "thread_tracker.h"

namespace fasthprof {


namespace {

// Bytes the heap holds now (Runtime.totalMemory() - freeMemory()), 0 if unknown.
uint64_t used_heap_bytes(JNIEnv* jni) {
  // Every call below may leave an exception, which must be looked at before the next JNI call.
  auto failed = [jni] { return jvmti::clear_exception(jni); };
  jvmti::LocalFrame frame(jni, 4);
  jclass runtime_class = jni->FindClass("java/lang/Runtime");
  if (failed() || runtime_class == nullptr) return 0;
  jmethodID get_runtime = jni->GetStaticMethodID(runtime_class, "getRuntime", "()Ljava/lang/Runtime;");
  if (failed() || get_runtime == nullptr) return 0;
  jmethodID total = jni->GetMethodID(runtime_class, "totalMemory", "()J");
  if (failed() || total == nullptr) return 0;
  jmethodID free = jni->GetMethodID(runtime_class, "freeMemory", "()J");
  if (failed() || free == nullptr) return 0;
  jobject runtime = jni->CallStaticObjectMethod(runtime_class, get_runtime);
  if (failed() || runtime == nullptr) return 0;
  jlong t = jni->CallLongMethod(runtime, total);
  if (failed()) return 0;
  jlong f = jni->CallLongMethod(runtime, free);
  if (failed()) return 0;
  return t > f ? static_cast<uint64_t>(t - f) : 0;
}

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

}  // namespace

void HeapDumper::add_capabilities(jvmtiCapabilities* wanted) {
  wanted->can_tag_objects = 1;
  wanted->can_suspend = 1;
}

void HeapDumper::write_report(ReportContext& report) {
  {
    // Which dumper, said on a line of its own (the report's verbose line comes whole at its end).
    JNIEnv* jni = report.jni;
    DumperPlan plan = vm_dump_.plan(jni, reports_++, report.at_exit, [jni] { return used_heap_bytes(jni); });
    if (context_.options->diagnostics()) write_stderr("fasthprof: heap dump: " + plan.why + "\n");
    if (plan.vm && vm_dump_.run(report, plan) != VmHeapDump::Outcome::kFallBack) return;
  }
  JNIEnv* jni = report.jni;
  jvmtiEnv* jvmti = context_.jvmti;
  ProfileWriter& writer = *context_.writer;
  const Options& options = *context_.options;
  bool stats = options.diagnostics();  // verbose=y
  uint64_t started = monotonic_ns();

  HeldThreads held(jvmti, report);
  warn_if_disk_small(jni, options);
  uint64_t link_started = monotonic_ns();
  ClassLinkResult linking = link_unprepared_classes(jvmti, jni);
  double link_seconds = seconds_since(link_started);
  if (!linking.error.empty()) {
    write_stderr("fasthprof: warning: classes that are not linked yet are dumped without fields: " + linking.error +
                 "\n");
  } else if (linking.failed != 0) {
    write_stderr("fasthprof: warning: " + std::to_string(linking.failed) +
                 " classes could not be linked and are dumped without fields (first: " + linking.first_failure +
                 ")\n");
  }
  held.hold(*context_.threads);
  // Every thread and class event queued up to here is applied; with the program's threads held,
  // no allocation is made until the walk is over: heap=all interns every one queued and writes
  // its TRACE now, so that objects tagged by allocation tracking name their allocation trace
  // (looked up from the tag during the walk).
  context_.apply_lifecycle(jni);
  if (allocation_traces_ != nullptr) allocation_traces_->intern_pending(report);
  writer.write_unwritten_traces();

  std::unordered_map<uint64_t, DumpThread> threads;
  held.take_stacks(writer, &threads);
  ClassLayoutTable classes;
  ClassCollection collection;
  uint64_t classes_started = monotonic_ns();
  if (!collect_classes(jvmti, jni, writer, *context_.classes, options.primfields, &next_heap_dump_id,
                       &classes, &collection)) {
    held.release();
    release_class_collection(jni, &collection);
    write_stderr("fasthprof: the heap dump failed: the loaded classes could not be described\n");
    return;
  }
  double classes_seconds =
      seconds_since(classes_started);
  // Threads in serial order, so that the file is stable for a stable program.
  std::vector<std::pair<uint64_t, DumpThread>> ordered(threads.begin(), threads.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second.serial < b.second.serial; });

  HeapWalkSetup setup;
  setup.classes = &classes;
  setup.class_class_id = collection.class_class_id;
  setup.holder_id = collection.class_field_holder_id;
  setup.threads = &threads;
  setup.allocation_traces = allocation_traces_;
  setup.text = !writer.binary();
  setup.primitive_fields = options.primfields;
  setup.primitive_arrays = options.primarrays;
  HeapWalkResult walk;
  HeapDumpCounts counts;
  std::string staging_error;
  if (writer.binary()) {
    HeapDumpWriter segments(writer.records());
    BinaryHeapDumpOutput out(segments);
    HeapDumpAssembler assembler(classes, out, collection.object_class_id,
                                collection.class_class_id, options.primfields);
    setup.assembler = &assembler;
    setup.bytes_written = [&writer] { return writer.records().position(); };
    assembler.write_classes();
    for (const auto& [id, thread] : ordered) assembler.root_thread(id, thread.serial, thread.trace_serial);
    walk = run_heap_walk(jvmti, setup);
    held.release();
    segments.finish();
    counts = assembler.counts();
    if (walk.failed) context_.sink->abandon_report("the heap dump was left out: its walk was stopped");
  } else {
    std::string folder = options.net_host.empty() ? folder_of(options.output_path()) : std::string();
    std::unique_ptr<StagingFile> staged = StagingFile::create(folder, &staging_error);
    if (!staged) {
      held.release();
      write_stderr("fasthprof: the heap dump failed: " + staging_error + "\n");
      release_class_collection(jni, &collection);
      return;
    }
    StagingMemory roots;
    {
      TextWriter root_lines(roots);
      TextWriter object_lines(*staged);
      TextHeapDumpOutput out(root_lines, object_lines);
      HeapDumpAssembler assembler(classes, out, collection.object_class_id,
                                  collection.class_class_id, options.primfields);
      setup.assembler = &assembler;
      setup.bytes_written = [&staged] { return staged->size(); };
      for (const auto& [id, thread] : ordered) assembler.root_thread(id, thread.serial, thread.trace_serial);
      walk = run_heap_walk(jvmti, setup);
      held.release();
      assembler.write_classes();
      counts = assembler.counts();
    }
    TextWriter& text = writer.text();
    text.flush();
    // A dump without its objects would look complete (BEGIN, roots, END): the report is cut back
    // as a failed write would cut it, so that the file holds only complete reports.
    if (walk.failed) {
      context_.sink->abandon_report("the heap dump was left out: its walk was stopped");
    } else if (staged->failed()) {
      context_.sink->abandon_report("the heap dump was left out: " + staged->error());
    } else {
      text.heap_dump_begin(counts.objects(), counts.bytes, std::time(nullptr));
      text.raw(roots.text());
      text.flush();
      if (staged->copy_to(*context_.sink, &staging_error)) {
        text.heap_dump_end();
      } else {
        context_.sink->abandon_report("the heap dump was left out: " + staging_error);
      }
    }
  }
  release_class_collection(jni, &collection);
  double dump_seconds = seconds_since(started);
  if (counts.dropped_elements != 0) {
    write_stderr("fasthprof: warning: " + std::to_string(counts.dropped_elements) +
                 " object-array elements came out of order or past their array's end and were written as null\n");
  }
  if (walk.error != JVMTI_ERROR_NONE) {
    write_stderr("fasthprof: the heap walk failed (" + jvmti::error_name(walk.error) +
                 "); the dump holds what was written before\n");
  }
  writer.flush();
  uint64_t cleared = 0;
  double clear_seconds = clear_heap_dump_tags(jvmti, &cleared);
  if (stats) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "fasthprof: heap dump stats: seconds=%.3f link_seconds=%.3f classes_linked=%llu classes_seconds=%.3f "
                  "walk_seconds=%.3f objects=%llu instances=%llu "
                  "object_arrays=%llu primitive_arrays=%llu classes=%llu roots=%llu class_instances=%llu "
                  "unknown_class_objects=%llu class_field_objects=%llu threads=%zu suspended=%zu "
                  "peak_pending=%zu tags_cleared=%llu clear_seconds=%.3f\n",
                  dump_seconds, link_seconds, static_cast<unsigned long long>(linking.linked), classes_seconds,
                  walk.seconds, static_cast<unsigned long long>(counts.objects()),
                  static_cast<unsigned long long>(counts.instances),
                  static_cast<unsigned long long>(counts.object_arrays),
                  static_cast<unsigned long long>(counts.primitive_arrays),
                  static_cast<unsigned long long>(counts.class_dumps),
                  static_cast<unsigned long long>(counts.roots),
                  static_cast<unsigned long long>(walk.class_instances),
                  static_cast<unsigned long long>(counts.unknown_classes),
                  static_cast<unsigned long long>(collection.class_field_objects), threads.size(),
                  held.suspended(), walk.peak_pending, static_cast<unsigned long long>(cleared), clear_seconds);
    write_stderr(line);
  }
}

}  // namespace fasthprof
