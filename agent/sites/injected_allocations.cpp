// heap=sites counted by injected code (agent/sites/injected_allocations.h).
#include "sites/injected_allocations.h"

#include <cstdio>

#include "base/clock.h"
#include "base/stderr_line.h"
#include "class_tracker.h"
#include "instrument/tracker_threads.h"
#include "jvmti_support.h"
#include "sections/site_table.h"

namespace fasthprof {

namespace {

// Between reports the owner takes the counts this often (a collect reads every thread's counters).
constexpr uint64_t kCollectIntervalNs = 1'000'000'000;
// Threads counted apart; more at once count together under a lock (FasthprofAllocs).
constexpr jint kThreadCap = 16384;

std::string signature_of(const std::string& type) {
  return !type.empty() && type[0] == '[' ? type : "L" + type + ";";
}

}  // namespace

InjectedAllocations::InjectedAllocations(const AgentContext& context, ClassInstrumenter* instrumenter)
    : context_(context), instrumenter_(instrumenter) {
  instrumenter_->inject_allocations(
      [this](std::string_view class_name, const InjectedSite& site) { return add_site(class_name, site); });
}

uint32_t InjectedAllocations::add_site(std::string_view class_name, const InjectedSite& site) {
  InjectedMethods& methods = *instrumenter_->methods();
  uint32_t method = methods.find_or_add(class_name, site.method_name, site.descriptor);
  methods.add_line(method, site.offset, site.line);
  SiteKind kind = site_kind(site.type, site.dimensions);
  std::lock_guard<std::mutex> lock(sites_mutex_);
  auto index = static_cast<uint32_t>(sites_.size());
  sites_.push_back({method, site.offset, kind, signature_of(site.type)});
  return (index << 4) | static_cast<uint32_t>(kind);
}

bool InjectedAllocations::start(JNIEnv* jni, std::string* why) {
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
  if (jvmti::clear_exception(jni) || start == nullptr || ignore_ == nullptr || collect_ == nullptr ||
      stop_ == nullptr) {
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
  jni->GetLongArrayRegion(figures, 0, 2, reinterpret_cast<jlong*>(figures_));
  std::vector<uint32_t> serials = tracker_thread_serials(jni, context_.jvmti, *context_.writer, threads,
                                                          context_.options->thread_in_traces, ended);
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

void InjectedAllocations::collect(JNIEnv* jni, bool now) {
  if (counter_ == nullptr || jni == nullptr) return;
  if (!writer_ignored_) {
    // The owner's own Java calls (class linking, reports' Runtime calls) are not the program's.
    writer_ignored_ = true;
    jni->CallStaticVoidMethod(counter_, ignore_);
    jvmti::clear_exception(jni);
  }
  if (!now && monotonic_ns() - last_collect_ns_ < kCollectIntervalNs) return;
  last_collect_ns_ = monotonic_ns();
  jvmti::LocalFrame frame(jni, static_cast<jint>(figures_[0]) + 64);
  auto result = static_cast<jobjectArray>(jni->CallStaticObjectMethod(counter_, collect_, nullptr));
  if (jvmti::clear_exception(jni) || result == nullptr) return;
  std::vector<jobject> ended;
  take_rows(jni, result, &ended);
  if (ended.empty()) return;
  // Their last counts, and their states go (their threads allocate no more).
  jobjectArray array = tracker_thread_array(jni, ended);
  if (array == nullptr) return;
  result = static_cast<jobjectArray>(jni->CallStaticObjectMethod(counter_, collect_, array));
  if (jvmti::clear_exception(jni) || result == nullptr) return;
  take_rows(jni, result, nullptr);
}

// serial_by_signature_ over every registered loaded class; with register_loaded, every class the
// VM has loaded is registered first (array classes have no ClassPrepare of their own).
void InjectedAllocations::index_classes(JNIEnv* jni, bool register_loaded) {
  if (register_loaded) context_.classes->record_loaded_classes(jni);
  const ClassRegistry& registry = context_.writer->classes();
  if (registry.size() == indexed_classes_) return;
  indexed_classes_ = registry.size();
  serial_by_signature_.clear();
  // Two loaders may each have a class of one name: the boot loader's, else the first registered.
  registry.for_each_loaded([&](const ClassInfo& info) {
    auto [it, inserted] = serial_by_signature_.try_emplace(info.signature, info.serial);
    if (!inserted && info.loader_key == 0) it->second = info.serial;
  });
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

void InjectedAllocations::feed(JNIEnv* jni, AllocationRecorder& recorder) {
  if (pending_.empty()) return;
  size_t site_count = 0;
  {
    std::lock_guard<std::mutex> lock(sites_mutex_);
    site_count = sites_.size();
  }
  if (resolved_.size() < site_count) resolved_.resize(site_count);
  // Resolve the sites met for the first time: by the classes registered, then (once) by every class loaded.
  std::vector<uint32_t> unsized;
  for (bool register_loaded : {false, true}) {
    bool missing = false;
    index_classes(jni, register_loaded);
    for (const auto& [key, count] : pending_) {
      auto index = static_cast<uint32_t>(key >> 32);
      if (index >= resolved_.size() || resolved_[index].class_serial != 0) continue;
      if (!resolve(jni, index, &resolved_[index])) {
        missing = true;
        continue;
      }
      bool instance = false;
      {
        std::lock_guard<std::mutex> lock(sites_mutex_);
        instance = sites_[index].kind == SiteKind::kInstance;
      }
      if (instance) unsized.push_back(index);
    }
    if (!missing) break;
  }
  measure_instances(jni, unsized);
  ProfileWriter& writer = *context_.writer;
  const int depth = context_.current_depth();
  std::vector<StackFrame> frames;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto index = static_cast<uint32_t>(it->first >> 32);
    auto thread = static_cast<uint32_t>(it->first);
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
    if (depth > 0) frames.push_back({InjectedMethods::kMark | described.method_id, static_cast<int64_t>(described.offset)});
    SiteIdentity identity{site->class_serial, writer.intern_trace(thread, frames), site->array_kind};
    uint64_t bytes = described.kind == SiteKind::kInstance ? it->second.objects * site->instance_size : it->second.bytes;
    recorder.add_counted(identity, it->second.objects, bytes);
    counted_objects_ += it->second.objects;
    it = pending_.erase(it);
  }
  unresolved_objects_ = 0;
  for (const auto& [key, count] : pending_) unresolved_objects_ += count.objects;
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
  char line[256];
  std::snprintf(line, sizeof(line),
                "fasthprof: alloc=inject: sites=%zu objects_counted=%llu objects_of_unknown_classes=%llu "
                "thread_states=%lld counts_over_thread_cap=%lld\n",
                sites, static_cast<unsigned long long>(counted_objects_),
                static_cast<unsigned long long>(unresolved_objects_), static_cast<long long>(figures_[0]),
                static_cast<long long>(figures_[1]));
  write_stderr(line);
}

}  // namespace fasthprof
