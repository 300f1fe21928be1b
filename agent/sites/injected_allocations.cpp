// heap=sites counted by injected code (agent/sites/injected_allocations.h).
#include "sites/injected_allocations.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/clock.h"
#include "base/stderr_line.h"
#include "class_tracker.h"
#include "cpu/cpu_timer.h"
#include "hotspot_structs.h"
#include "instrument/tracker_threads.h"
#include "jvmti_support.h"
#include "sections/site_table.h"

namespace fasthprof {

namespace {

// Between reports the owner takes the counts this often (a collect reads every thread's counters).
constexpr uint64_t kCollectIntervalNs = 1'000'000'000;
// Threads counted apart; more at once count together under a lock (FasthprofAllocs).
constexpr jint kThreadCap = 16384;
// The tracker's word set once the traces' budget was reached (FasthprofTracker.start()).
constexpr size_t kBudgetReachedWord = 80;

std::string signature_of(const std::string& type) {
  return !type.empty() && type[0] == '[' ? type : "L" + type + ";";
}

}  // namespace

InjectedAllocations::InjectedAllocations(const AgentContext& context, ClassInstrumenter* instrumenter)
    : context_(context), instrumenter_(instrumenter) {
  instrumenter_->inject_allocations(
      [this](std::string_view class_name, const InjectedSite& site) { return add_site(class_name, site); });
  if (context.options->depth > 1) {
    // The frame walk needs frame pointers in compiled code, which only a VM still loading can be
    // told to keep; cpu=times keeps its shadow stack anyway, which then serves both.
    walked_ = !context.attached && !context.options->cpu_timing && context.options->depth <= FrameWalk::kMaxDepth &&
              ObjectSizes::unreadable_collector() == nullptr && FrameWalk::keep_frame_pointers();
    if (!walked_ && context.options->live) {
      // Live counts by object headers name traces by walked context: without the walk the event
      // path counts (start() refuses), so no call is put into every method for nothing.
      const char* collector = ObjectSizes::unreadable_collector();
      marks_refusal_ = collector != nullptr
                           ? std::string("live counts by injection need the Serial, Parallel or G1 collector, not -XX:+") + collector
                           : "live counts by injection need traces by frame walk (not attached, not with cpu=times, "
                             "depth at most " + std::to_string(FrameWalk::kMaxDepth) + ", frame pointers kept)";
    } else if (!walked_) {
      traced_ = true;
      instrumenter_->inject_call_positions();
      instrumenter_->catch_exceptions(context.jvmti);
    }
  }
}

// live=y, at start (before the instrumenter begins): whether the objects can carry their sites in
// their headers (agent/sites/object_marks.h); if not, start() refuses and the event path counts,
// with its tags.
bool InjectedAllocations::choose_marks(JNIEnv* jni, std::string* why) {
  if (context_.options->thread_in_traces) {
    *why = "live counts by injection name no thread in traces (thread=y)";
    return false;
  }
  if (!marks_refusal_.empty()) {
    *why = marks_refusal_;
    return false;
  }
  mark_layout_ = read_object_mark_layout(context_.jvmti, jni);
  if (!mark_layout_.usable) {
    *why = "live counts by injection need room for a site in each object's header: " + mark_layout_.why_not;
    return false;
  }
  instrumenter_->inject_marks();
  return true;
}

// The frame walk's native, and the tracker's counting methods told to call it. If the walk cannot
// start, the native asks GetStackTrace at every allocation: still exact, at the JVMTI floor's cost.
bool InjectedAllocations::start_walk(JNIEnv* jni, jclass tracker, std::string* why) {
  std::string walk_why;
  if (!walk_.start(context_.jvmti, context_.options->depth, &walk_why)) {
    jvmti::print_error("alloc=inject: " + walk_why + "; each allocation's trace is taken by GetStackTrace instead");
  }
  jmethodID start = jni->GetStaticMethodID(tracker, "startAllocWalk", "()V");
  if (jvmti::clear_exception(jni) || start == nullptr) {
    *why = "the tracker class lacks its methods";
    return false;
  }
  jni->CallStaticVoidMethod(tracker, start);
  return !jvmti::clear_exception(jni);
}

// The natives whose objects the injected code counts at their calls, and the compiled method events
// (the frame walk's code, the natives' wrappers) with those of the methods compiled already.
void InjectedAllocations::start_natives(JNIEnv* jni) {
  jvmti::LocalFrame frame(jni, 8);
  if (jclass unsafe = jni->FindClass("jdk/internal/misc/Unsafe")) {
    allocate_instance_ = jni->GetMethodID(unsafe, "allocateInstance", "(Ljava/lang/Class;)Ljava/lang/Object;");
  }
  jvmti::clear_exception(jni);
  if (clones_counted_) {
    jclass object = jni->FindClass("java/lang/Object");
    object_clone_ = object == nullptr ? nullptr : jni->GetMethodID(object, "clone", "()Ljava/lang/Object;");
    jvmti::clear_exception(jni);
  }
  std::string why;
  if (!natives_.start(context_.jvmti, jni, allocate_instance_, object_clone_, &why)) {
    jvmti::print_error("alloc=inject: " + why + "; the natives counted at their calls are told by JVMTI");
  }
  jvmtiEnv* jvmti = context_.jvmti;
  if (jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_LOAD, nullptr) != JVMTI_ERROR_NONE ||
      jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_UNLOAD, nullptr) != JVMTI_ERROR_NONE) {
    // Without them no compiled frame is named by its code: the walks and the natives ask JVMTI.
    jvmti::print_error("alloc=inject: the compiled method events cannot be enabled; traces and natives are "
                       "taken by JVMTI");
    return;
  }
  jvmti->GenerateEvents(JVMTI_EVENT_COMPILED_METHOD_LOAD);
}

// The tracker's shadow stack for allocation traces: started by cpu=times too when it is on (its
// clock and words then serve both, and the traces are as deep as the deeper asks), else here with
// words of our own and no clock.
bool InjectedAllocations::start_traces(JNIEnv* jni, jclass tracker, std::string* why) {
  jmethodID start = jni->GetStaticMethodID(tracker, "startAllocTraces", "(JIJI)V");
  tracker_ignore_ = jni->GetStaticMethodID(tracker, "ignoreCurrentThread", "()V");
  forget_ = jni->GetStaticMethodID(tracker, "forget", "([Ljava/lang/Thread;)V");
  if (jvmti::clear_exception(jni) || start == nullptr || tracker_ignore_ == nullptr || forget_ == nullptr) {
    *why = "the tracker class lacks its methods";
    return false;
  }
  owns_tracker_ = !context_.options->cpu_timing;
  // Words of our own even with cpu=times, whose start (before or after this one) puts its own in
  // their place: the tracker never runs without some.
  if (posix_memalign(&words_, 64, 128) != 0) {
    words_ = nullptr;
    *why = "out of memory";
    return false;
  }
  std::memset(words_, 0, 128);
  budget_bytes_ = trace_budget_bytes(max_heap_bytes(jni));
  jni->CallStaticVoidMethod(tracker, start, static_cast<jlong>(reinterpret_cast<uintptr_t>(words_)),
                            static_cast<jint>(context_.options->depth), budget_bytes_, kThreadCap);
  if (jvmti::clear_exception(jni)) {
    *why = "the tracker did not start";
    return false;
  }
  tracker_ = static_cast<jclass>(jni->NewGlobalRef(tracker));
  return true;
}

uint32_t InjectedAllocations::add_site(std::string_view class_name, const InjectedSite& site) {
  InjectedMethods& methods = *instrumenter_->methods();
  uint32_t method = methods.find_or_add(class_name, site.method_name, site.descriptor);
  methods.add_line(method, site.offset, site.line);
  // A multianewarray of d >= 2 dimensions makes arrays at d levels, each its own class: d sites in
  // a row (under the one lock, so no other class's come between), the ID naming the innermost
  // (FasthprofAllocs.countMulti).
  size_t levels = site.dimensions >= 2 ? site.dimensions : 1;
  std::lock_guard<std::mutex> lock(sites_mutex_);
  if (site.instantiates || site.clones) {
    // A call of Unsafe.allocateInstance or Object.clone: never counted as such, only the sites
    // class_site() makes from it for each class it is given.
    sites_.push_back({method, site.offset, SiteKind::kInstance, std::string(), site.clones});
    return static_cast<uint32_t>(sites_.size() - 1) << 4;
  }
  SiteKind kind = SiteKind::kInstance;
  for (size_t level = 0; level < levels; ++level) {
    std::string type = site.type.substr(level);
    kind = site_kind(type);
    sites_.push_back({method, site.offset, kind, signature_of(type)});
  }
  auto index = static_cast<uint32_t>(sites_.size() - 1);
  return (index << 4) | static_cast<uint32_t>(kind);
}

namespace {

InjectedAllocations* class_sites_owner = nullptr;  // the one instance, once started

}  // namespace

jint InjectedAllocations::class_site(JNIEnv*, jclass klass, jint call) {
  char* signature = nullptr;
  if (klass == nullptr || context_.jvmti->GetClassSignature(klass, &signature, nullptr) != JVMTI_ERROR_NONE) return -1;
  std::string type(signature);
  context_.jvmti->Deallocate(reinterpret_cast<unsigned char*>(signature));
  if (type.empty()) return -1;
  std::lock_guard<std::mutex> lock(sites_mutex_);
  auto index = static_cast<uint32_t>(call) >> 4;
  if (index >= sites_.size()) return -1;
  // An array class given to Unsafe.allocateInstance makes nothing (it throws): not counted. A
  // clone of an array is an array of the same length: sized as the array allocations are.
  const SiteKind kind = type[0] == '[' ? site_kind(type) : SiteKind::kInstance;
  if (kind != SiteKind::kInstance && !sites_[index].clone) return -1;
  auto [it, added] = class_sites_.try_emplace({index, type}, 0);
  if (added) {
    Site site = sites_[index];
    site.kind = kind;
    site.signature = std::move(type);
    sites_.push_back(std::move(site));
    it->second = static_cast<uint32_t>(sites_.size() - 1);
  }
  return static_cast<jint>((it->second << 4) | static_cast<uint32_t>(kind));
}

// The counter's natives are this library's Java_java_lang_FasthprofAllocs_* functions. The JVM
// finds them by name in an agent's library (one call binds them), except JDK 17 in an agent it
// loaded by attach: RegisterNatives then, of which HotSpot warns on stdout for a boot class.
bool InjectedAllocations::bind_natives(JNIEnv* jni, jclass counter) {
  jmethodID probe = jni->GetStaticMethodID(counter, "newClassSite", "(Ljava/lang/Class;I)I");
  if (probe == nullptr) {
    jvmti::clear_exception(jni);
    return false;
  }
  jni->CallStaticIntMethod(counter, probe, nullptr, 0);
  if (!jvmti::clear_exception(jni)) return true;
  JNINativeMethod natives[] = {
      {const_cast<char*>("newClassSite"), const_cast<char*>("(Ljava/lang/Class;I)I"),
       reinterpret_cast<void*>(&Java_java_lang_FasthprofAllocs_newClassSite)},
      {const_cast<char*>("callers"), const_cast<char*>("()I"), reinterpret_cast<void*>(&Java_java_lang_FasthprofAllocs_callers)},
      {const_cast<char*>("cloneCallers"), const_cast<char*>("()I"),
       reinterpret_cast<void*>(&Java_java_lang_FasthprofAllocs_cloneCallers)},
  };
  if (jni->RegisterNatives(counter, natives, 3) == JNI_OK) return true;
  jvmti::clear_exception(jni);
  return false;
}

bool InjectedAllocations::start(JNIEnv* jni, std::string* why) {
  if (context_.options->live && !choose_marks(jni, why)) return false;
  if (!sizes_.init(jni, context_.jvmti, why)) return false;
  jclass tracker = instrumenter_->tracker(jni, "heap=sites");
  if (tracker == nullptr) {
    *why = "the tracker classes cannot be defined";
    return false;
  }
  jvmti::LocalFrame frame(jni, 8);
  jclass counter = jni->FindClass("java/lang/FasthprofAllocs");
  jmethodID start = counter == nullptr ? nullptr : jni->GetStaticMethodID(counter, "start", "([I[III)V");
  ignore_ = counter == nullptr ? nullptr : jni->GetStaticMethodID(counter, "ignoreCurrentThread", "()V");
  collect_ = counter == nullptr ? nullptr
                                : jni->GetStaticMethodID(counter, "collect", "([Ljava/lang/Thread;)[Ljava/lang/Object;");
  stop_ = counter == nullptr ? nullptr : jni->GetStaticMethodID(counter, "stop", "()V");
  pause_ = counter == nullptr ? nullptr : jni->GetStaticMethodID(counter, "pause", "(Z)V");
  if (jvmti::clear_exception(jni) || start == nullptr || ignore_ == nullptr || collect_ == nullptr ||
      stop_ == nullptr || pause_ == nullptr) {
    *why = "the allocation counter class lacks its methods";
    return false;
  }
  jintArray bases = jni->NewIntArray(6);
  jintArray shifts = jni->NewIntArray(6);
  if (bases == nullptr || shifts == nullptr) {
    jvmti::clear_exception(jni);
    *why = "out of Java heap";
    return false;
  }
  for (int kind = 1; kind <= 5; ++kind) {
    const ArrayLayout& layout = sizes_.array_layout(static_cast<SiteKind>(kind));
    jni->SetIntArrayRegion(bases, kind, 1, &layout.base);
    jni->SetIntArrayRegion(shifts, kind, 1, &layout.shift);
  }
  jni->CallStaticVoidMethod(counter, start, bases, shifts, static_cast<jint>(sizes_.alignment()), kThreadCap);
  if (jvmti::clear_exception(jni)) {
    *why = "the allocation counter did not start";
    return false;
  }
  if (traced_ && !start_traces(jni, tracker, why)) return false;
  class_sites_owner = this;
  if (!bind_natives(jni, counter)) {
    *why = "the allocation counter's natives cannot be bound";
    return false;
  }
  if (walked_ && !start_walk(jni, tracker, why)) return false;
  if (context_.options->live && !start_marks(jni, why)) return false;
  start_natives(jni);
  counter_ = static_cast<jclass>(jni->NewGlobalRef(counter));
  last_collect_ns_ = monotonic_ns();
  return true;
}

// Takes one collect() result into pending_. With `ended`, fills it with the thread objects (local
// references) of the states whose thread has terminated.
void InjectedAllocations::take_rows(JNIEnv* jni, jobjectArray result, std::vector<jobject>* ended) {
  auto keys = static_cast<jintArray>(jni->GetObjectArrayElement(result, 0));
  auto values = static_cast<jlongArray>(jni->GetObjectArrayElement(result, 1));
  auto threads = static_cast<jobjectArray>(jni->GetObjectArrayElement(result, 2));
  auto figures = static_cast<jlongArray>(jni->GetObjectArrayElement(result, 3));
  jsize words = jni->GetArrayLength(keys);
  std::vector<jint> key(static_cast<size_t>(words));
  std::vector<jlong> value(static_cast<size_t>(words));
  if (words > 0) {
    jni->GetIntArrayRegion(keys, 0, words, key.data());
    jni->GetLongArrayRegion(values, 0, words, value.data());
  }
  jni->GetLongArrayRegion(figures, 0, 3, reinterpret_cast<jlong*>(figures_));
  std::vector<uint32_t> serials = tracker_thread_serials(jni, context_.jvmti, *context_.writer, threads,
                                                          context_.options->thread_in_traces, ended);
  if (traced_ || walked_) take_traced_rows(jni, result, serials);
  for (jsize row = 0; row + 1 < words; row += 2) {
    auto thread_index = static_cast<size_t>(key[static_cast<size_t>(row)]);
    uint32_t serial = thread_index < serials.size() ? serials[thread_index] : 0;
    uint64_t pending_key = (static_cast<uint64_t>(static_cast<uint32_t>(key[static_cast<size_t>(row) + 1])) << 32) | serial;
    Count& count = pending_[pending_key];
    count.objects += static_cast<uint64_t>(value[static_cast<size_t>(row)]);
    count.bytes += static_cast<uint64_t>(value[static_cast<size_t>(row) + 1]);
  }
  jni->DeleteLocalRef(keys);
  jni->DeleteLocalRef(values);
  jni->DeleteLocalRef(threads);
  jni->DeleteLocalRef(figures);
}

void InjectedAllocations::before_natives_event() {
  if (allocate_instance_ != nullptr) instance_intrinsic_.prepare(context_.jvmti);
}

void InjectedAllocations::after_natives_event() { instance_intrinsic_.release(); }

bool InjectedAllocations::pause(JNIEnv* jni, bool paused) {
  if (counter_ == nullptr || jni == nullptr) return false;
  jni->CallStaticVoidMethod(counter_, pause_, static_cast<jboolean>(paused ? JNI_TRUE : JNI_FALSE));
  return !jvmti::clear_exception(jni);
}

bool InjectedAllocations::collect(JNIEnv* jni, bool now) {
  if (counter_ == nullptr || jni == nullptr) return false;
  instance_intrinsic_.keep_released();
  if (!writer_ignored_) {
    // The owner's own Java calls (class linking, reports' Runtime calls) are not the program's.
    writer_ignored_ = true;
    jni->CallStaticVoidMethod(counter_, ignore_);
    jvmti::clear_exception(jni);
    if (owns_tracker_) jni->CallStaticVoidMethod(tracker_, tracker_ignore_);
    jvmti::clear_exception(jni);
  }
  if (owns_tracker_ && !budget_said_ && words_ != nullptr &&
      __atomic_load_n(reinterpret_cast<int*>(static_cast<char*>(words_) + kBudgetReachedWord), __ATOMIC_ACQUIRE) != 0) {
    // With cpu=times its own line says it (the budget is shared).
    budget_said_ = true;
    jvmti::print_error("alloc=inject: the traces reached their budget of " + std::to_string(budget_bytes_ >> 20) +
                       " MiB (1/16 of the maximum heap, 4 to 128 MiB); allocations at new (site, trace) pairs are "
                       "counted under shorter traces from now on");
  }
  if (!now && monotonic_ns() - last_collect_ns_ < kCollectIntervalNs) return false;
  last_collect_ns_ = monotonic_ns();
  jvmti::LocalFrame frame(jni, static_cast<jint>(figures_[0]) + 64);
  auto result = static_cast<jobjectArray>(jni->CallStaticObjectMethod(counter_, collect_, nullptr));
  if (jvmti::clear_exception(jni) || result == nullptr) return false;
  std::vector<jobject> ended;
  take_rows(jni, result, &ended);
  if (ended.empty()) return true;
  // Their last counts, and their states go (their threads allocate no more).
  jobjectArray array = tracker_thread_array(jni, ended);
  if (array == nullptr) return true;
  result = static_cast<jobjectArray>(jni->CallStaticObjectMethod(counter_, collect_, array));
  if (jvmti::clear_exception(jni) || result == nullptr) return true;
  take_rows(jni, result, nullptr);
  // Without cpu=times nobody else drops the tracker's states of those threads.
  if (owns_tracker_) jni->CallStaticVoidMethod(tracker_, forget_, array);
  jvmti::clear_exception(jni);
  return true;
}

// serial_by_signature_ over every registered loaded class; with register_loaded, every class the
// VM has loaded is registered first (array classes have no ClassPrepare of their own).
void InjectedAllocations::index_classes(JNIEnv* jni, bool register_loaded) {
  if (register_loaded) context_.classes->record_loaded_classes(jni);
  const ClassRegistry& registry = context_.writer->classes();
  if (registry.size() == indexed_classes_) return;
  indexed_classes_ = registry.size();
  registry.serials_by_signature(&serial_by_signature_);
}

bool InjectedAllocations::resolve(JNIEnv*, uint32_t index, Resolved* out) {
  std::string signature;
  {
    std::lock_guard<std::mutex> lock(sites_mutex_);
    if (index >= sites_.size()) return false;
    signature = sites_[index].signature;
  }
  auto it = serial_by_signature_.find(signature);
  if (it == serial_by_signature_.end()) return false;
  out->class_serial = it->second;
  out->array_kind = array_kind_of(signature);
  return true;
}

// The instance sizes of the classes of `indexes` (resolved `new` sites without one), in one
// GetObjectsWithTags call: a class object carries its registry ID as its tag.
void InjectedAllocations::measure_instances(JNIEnv* jni, const std::vector<uint32_t>& indexes) {
  if (indexes.empty()) return;
  std::vector<jlong> tags;
  std::unordered_map<jlong, uint64_t> size_of_tag;
  for (uint32_t index : indexes) {
    const ClassInfo* info = context_.writer->classes().find_by_serial(resolved_[index].class_serial);
    if (info != nullptr && size_of_tag.emplace(static_cast<jlong>(info->object_id), 0).second) {
      tags.push_back(static_cast<jlong>(info->object_id));
    }
  }
  // Every class object found comes back as a local reference at once.
  jvmti::LocalFrame frame(jni, static_cast<jint>(tags.size()) + 16);
  jint count = 0;
  jobject* objects = nullptr;
  jlong* found_tags = nullptr;
  if (context_.jvmti->GetObjectsWithTags(static_cast<jint>(tags.size()), tags.data(), &count, &objects,
                                         &found_tags) != JVMTI_ERROR_NONE) {
    return;
  }
  for (jint i = 0; i < count; ++i) {
    size_of_tag[found_tags[i]] = sizes_.instance_size(static_cast<jclass>(objects[i]));
    jni->DeleteLocalRef(objects[i]);
  }
  context_.jvmti->Deallocate(reinterpret_cast<unsigned char*>(objects));
  context_.jvmti->Deallocate(reinterpret_cast<unsigned char*>(found_tags));
  for (uint32_t index : indexes) {
    const ClassInfo* info = context_.writer->classes().find_by_serial(resolved_[index].class_serial);
    if (info != nullptr) resolved_[index].instance_size = size_of_tag[static_cast<jlong>(info->object_id)];
  }
}

// Resolves the sites met for the first time: by the classes registered, then (once) by every class
// loaded; measures the instance sizes of the new `new` sites.
void InjectedAllocations::resolve_pending(JNIEnv* jni, bool register_loaded_too) {
  size_t site_count = 0;
  {
    std::lock_guard<std::mutex> lock(sites_mutex_);
    site_count = sites_.size();
  }
  if (resolved_.size() < site_count) resolved_.resize(site_count);
  std::vector<uint32_t> unsized;
  for (bool register_loaded : {false, true}) {
    if (register_loaded && !register_loaded_too) break;
    bool missing = false;
    index_classes(jni, register_loaded);
    for (const auto* pending : {&pending_, &pending_traced_}) {
      for (const auto& [key, count] : *pending) {
        auto index = static_cast<uint32_t>(key >> 32);
        if (index >= resolved_.size() || resolved_[index].class_serial != 0) continue;
        if (!resolve(jni, index, &resolved_[index])) {
          missing = true;
          continue;
        }
        std::lock_guard<std::mutex> lock(sites_mutex_);
        if (sites_[index].kind == SiteKind::kInstance) unsized.push_back(index);
      }
    }
    if (!missing) break;
  }
  measure_instances(jni, unsized);
}

void InjectedAllocations::feed(JNIEnv* jni, AllocationRecorder& recorder, bool at_report) {
  if (pending_.empty() && pending_traced_.empty()) return;
  resolve_pending(jni, at_report);
  ProfileWriter& writer = *context_.writer;
  const int depth = context_.current_depth();
  std::vector<StackFrame> frames;
  // pending_'s low word is a thread serial (the trace is the site's frame), pending_traced_'s a trace.
  for (bool traced : {false, true}) {
    auto& pending = traced ? pending_traced_ : pending_;
    for (auto it = pending.begin(); it != pending.end();) {
      auto index = static_cast<uint32_t>(it->first >> 32);
      auto low = static_cast<uint32_t>(it->first);
      const Resolved* site = index < resolved_.size() ? &resolved_[index] : nullptr;
      if (site == nullptr || site->class_serial == 0) {
        ++it;  // its class is not known yet: counted at a later report
        continue;
      }
      Site described;
      {
        std::lock_guard<std::mutex> lock(sites_mutex_);
        described = sites_[index];
      }
      frames.clear();
      site_frames(described, static_cast<size_t>(std::max(depth, 0)), &frames);
      SiteIdentity identity{site->class_serial, traced ? low : writer.intern_trace(low, frames), site->array_kind};
      uint64_t bytes = described.kind == SiteKind::kInstance ? it->second.objects * site->instance_size : it->second.bytes;
      if (recorder.add_counted(identity, it->second.objects, bytes)) counted_objects_ += it->second.objects;
      it = pending.erase(it);
    }
  }
  unresolved_objects_ = 0;
  for (const auto* pending : {&pending_, &pending_traced_}) {
    for (const auto& [key, count] : *pending) unresolved_objects_ += count.objects;
  }
}

// A trace's first frames, as many as `depth` allows: Object.clone's for a clone (its native frame,
// at no line, as the event path has it), then the allocating method at the site's line.
void InjectedAllocations::site_frames(const Site& site, size_t depth, std::vector<StackFrame>* trace) const {
  if (site.clone && object_clone_ != nullptr && trace->size() < depth) {
    trace->push_back({reinterpret_cast<uint64_t>(object_clone_), -1});
  }
  if (trace->size() < depth) trace->push_back({InjectedMethods::kMark | site.method_id, static_cast<int64_t>(site.offset)});
}

void InjectedAllocations::walked_trace(const Site& site, uint32_t context, size_t depth,
                                       std::vector<StackFrame>* trace) {
  site_frames(site, depth, trace);
  if (context == 0) return;
  std::vector<StackFrame> walked = walk_.frames(context);
  for (size_t k = 0; k < walked.size() && trace->size() < depth; ++k) trace->push_back(walked[k]);
}

// The traced rows of one collect() result (elements 4 to 6, FasthprofAllocs.collect) into
// pending_traced_: each trace is the site's frame, then the node's frames below its top, each at
// the position it called from; depth frames at most. A node whose top is not the allocating method
// (its entry was not seen) keeps its top, at no line.
void InjectedAllocations::take_traced_rows(JNIEnv* jni, jobjectArray result, const std::vector<uint32_t>& serials) {
  auto keys = static_cast<jintArray>(jni->GetObjectArrayElement(result, 4));
  auto values = static_cast<jlongArray>(jni->GetObjectArrayElement(result, 5));
  auto frames = static_cast<jintArray>(jni->GetObjectArrayElement(result, 6));
  std::vector<jint> key(static_cast<size_t>(jni->GetArrayLength(keys)));
  std::vector<jlong> value(static_cast<size_t>(jni->GetArrayLength(values)));
  std::vector<jint> frame(static_cast<size_t>(jni->GetArrayLength(frames)));
  jni->GetIntArrayRegion(keys, 0, static_cast<jsize>(key.size()), key.data());
  jni->GetLongArrayRegion(values, 0, static_cast<jsize>(value.size()), value.data());
  jni->GetIntArrayRegion(frames, 0, static_cast<jsize>(frame.size()), frame.data());
  const auto depth = static_cast<size_t>(std::max(context_.current_depth(), 0));
  std::vector<StackFrame> trace;
  size_t at = 0;
  for (size_t row = 0; row * 3 + 2 < key.size() && row * 2 + 1 < value.size(); ++row) {
    auto thread_index = static_cast<size_t>(key[row * 3]);
    auto index = static_cast<uint32_t>(key[row * 3 + 1]);
    // A negative length is a walked context: the frames below the site's, the walk's to name.
    const jint context = key[row * 3 + 2] < 0 ? -key[row * 3 + 2] : 0;
    const size_t length = std::min(static_cast<size_t>(std::max(key[row * 3 + 2], 0)), (frame.size() - at) / 2);
    const size_t row_at = at;
    at += length * 2;
    Site described;
    {
      std::lock_guard<std::mutex> lock(sites_mutex_);
      if (index >= sites_.size()) continue;
      described = sites_[index];
    }
    trace.clear();
    walked_trace(described, static_cast<uint32_t>(context), depth, &trace);
    for (size_t k = 0; k < length && trace.size() < depth; ++k) {
      auto method = static_cast<uint32_t>(frame[row_at + 2 * k]);
      auto position = frame[row_at + 2 * k + 1];
      if (k == 0 && method == described.method_id) continue;  // the site's own frame
      trace.push_back({InjectedMethods::kMark | method, position > 0 ? static_cast<int64_t>(position - 1) : -1});
    }
    uint32_t serial = thread_index < serials.size() ? serials[thread_index] : 0;
    uint32_t trace_serial = context_.writer->intern_trace(serial, trace);
    Count& count = pending_traced_[(static_cast<uint64_t>(index) << 32) | trace_serial];
    count.objects += static_cast<uint64_t>(value[row * 2]);
    count.bytes += static_cast<uint64_t>(value[row * 2 + 1]);
  }
  jni->DeleteLocalRef(keys);
  jni->DeleteLocalRef(values);
  jni->DeleteLocalRef(frames);
}

namespace {

// HotSpot's intrinsics whose compiled code allocates with no allocation instruction and no
// VMObjectAlloc event: the Java method or native behind each counts (an instruction in
// Arrays.copyOfRange, the VMObjectAlloc event of Object.clone's native) only while the intrinsic
// is off. Names as -XX:DisableIntrinsic takes them, the same in JDK 17 and 25. Not
// _allocateInstance: the injected code counts Unsafe.allocateInstance at its call (class_site()),
// so its intrinsic may stay, and save the compiled callers the native and its event.
constexpr const char* kAllocatingIntrinsics = "_clone,_copyOf,_copyOfRange,_newArray,_allocateUninitializedArray";

}  // namespace

void InjectedAllocations::hold_back_allocating_intrinsics(bool attached) {
  // Counted by the SampledObjectAlloc event instead (start() fails): the intrinsics may stay.
  if (ObjectSizes::unreadable_collector() != nullptr) return;
  if (!attached && hotspot_append_to_list_flag("DisableIntrinsic", "CompileCommand", kAllocatingIntrinsics)) {
    // Every clone now runs the native, whose event a stack walk would follow: the calls sure to
    // run it are counted where they are instead (not with the shadow stack: the tracker counts a
    // clone by its walked context or its site alone).
    if (!traced_) {
      clones_counted_ = true;
      instrumenter_->inject_clone_calls();
    }
    return;
  }
  jvmti::print_error(std::string("alloc=inject: ") +
                     (attached ? "loaded into a running VM, the JIT's intrinsics stay on"
                               : "this VM does not let the agent turn the JIT's allocating intrinsics off") +
                     ": what compiled code allocates by Object.clone, Arrays.copyOf(Range) and Array.newInstance "
                     "is not counted");
}

void InjectedAllocations::leave_out_non_safepoint_debug_info() {
  if (context_.options->cpu_sampling) return;
  if (hotspot_settle_default_bool_flag("DebugNonSafepoints", false, "DisableAttachMechanism") &&
      context_.options->diagnostics()) {
    write_stderr("fasthprof: alloc=inject: compiled code records debug information at calls only (DebugNonSafepoints off)\n");
  }
}

void InjectedAllocations::stop(JNIEnv* jni) {
  if (counter_ != nullptr && jni != nullptr) {
    jni->CallStaticVoidMethod(counter_, stop_);
    jvmti::clear_exception(jni);
  }
  if (!context_.options->verbose_given) return;
  size_t sites = 0;
  {
    std::lock_guard<std::mutex> lock(sites_mutex_);
    sites = sites_.size();
  }
  char line[384];
  std::snprintf(line, sizeof(line),
                "fasthprof: alloc=inject: sites=%zu objects_counted=%llu objects_of_unknown_classes=%llu "
                "thread_states=%lld counts_over_thread_cap=%lld\n",
                sites, static_cast<unsigned long long>(counted_objects_),
                static_cast<unsigned long long>(unresolved_objects_), static_cast<long long>(figures_[0]),
                static_cast<long long>(figures_[1]));
  write_stderr(line);
  if (marking_) {
    std::snprintf(line, sizeof(line),
                  "fasthprof: alloc=inject: live counts by object headers: objects left unmarked=%lld "
                  "live objects of unknown classes=%llu mark pairs=%zu marks naming no site=%llu\n",
                  static_cast<long long>(figures_[2]), static_cast<unsigned long long>(unresolved_live_),
                  pair_keys_.size(), static_cast<unsigned long long>(stray_marks_));
    write_stderr(line);
  }
  ClassInstrumenter::Figures classes = instrumenter_->figures();
  std::snprintf(line, sizeof(line),
                "fasthprof: alloc=inject: classes loaded before the start retransformed=%llu failed=%llu "
                "left alone (nothing to count)=%llu\n",
                static_cast<unsigned long long>(classes.retransformed),
                static_cast<unsigned long long>(classes.retransform_failed),
                static_cast<unsigned long long>(classes.retransform_skipped));
  write_stderr(line);
  std::snprintf(line, sizeof(line),
                "fasthprof: alloc=inject: natives' events told by the thread's last Java frame=%llu by JVMTI=%llu\n",
                static_cast<unsigned long long>(natives_.read()), static_cast<unsigned long long>(natives_.asked()));
  write_stderr(line);
  if (allocate_instance_ != nullptr) write_stderr("fasthprof: alloc=inject: " + instance_intrinsic_.describe() + "\n");
  if (walked_) {
    std::snprintf(line, sizeof(line),
                  "fasthprof: alloc=inject: frame walk answers: thread caches=%llu shared table=%llu "
                  "GetStackTrace=%llu; contexts=%llu; compiled code unloaded=%llu times, answers kept across=%llu; "
                  "compiled frames named before their event=%llu\n",
                  static_cast<unsigned long long>(walk_.walked()), static_cast<unsigned long long>(walk_.shared_hits()),
                  static_cast<unsigned long long>(walk_.asked()), static_cast<unsigned long long>(walk_.contexts()),
                  static_cast<unsigned long long>(walk_.epochs()), static_cast<unsigned long long>(walk_.kept_answers()),
                  static_cast<unsigned long long>(walk_.named_early()));
    write_stderr(line);
    uint64_t checked = 0, agreed = 0;
    bool stub_apart = false;
    if (walk_.check_heaps(&checked, &agreed, &stub_apart)) {
      std::snprintf(line, sizeof(line),
                    "fasthprof: alloc=inject: code heaps' map: nmethods loaded=%llu named=%llu, call stub told apart=%s\n",
                    static_cast<unsigned long long>(checked), static_cast<unsigned long long>(agreed),
                    stub_apart ? "yes" : "no");
      write_stderr(line);
    } else {
      write_stderr("fasthprof: alloc=inject: code heaps' map not read: compiled frames named by their events alone\n");
    }
  }
}

}  // namespace fasthprof

// FasthprofAllocs.newClassSite (agent/sites/injected_allocations.h class_site), on the Java thread
// that made the object; found by the JVM by its name, as FasthprofAllocs.callers.
extern "C" JNIEXPORT jint JNICALL Java_java_lang_FasthprofAllocs_newClassSite(JNIEnv* jni, jclass, jclass klass, jint call) {
  fasthprof::InjectedAllocations* owner = fasthprof::class_sites_owner;
  return owner == nullptr ? -1 : owner->class_site(jni, klass, call);
}
