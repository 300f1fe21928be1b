// heap=sites with live counts, counted by injection: each object carries its mark ID in its
// header (java.lang.FasthprofMarks writes it after the allocation; agent/sites/object_marks.h says
// where and walks the heap for it). This file is InjectedAllocations' side of it:
//
//   start:   FasthprofMarks.start(the header's layout, by pairs when traces are walked)
//   report:  (forced collection) walk_marked: pair keys taken, the heap walked at a safepoint,
//            objects and array bytes tallied per mark ID on the VM thread (no JNI, no allocation)
//            -> collect, feed (the allocated counts) -> the tagged objects (event path) ->
//            add_marked_live: each ID's site and trace, as feed() makes them, its live counts.
//
// A mark ID is a site index + 1 (traces of one frame) or a pair ID (context << 32 | site index,
// numbered by FasthprofMarks in the order met, taken here by newPairs()).
#include <cstring>

#include "jvmti_support.h"
#include "records/profile_writer.h"
#include "sites/injected_allocations.h"

namespace fasthprof {

bool InjectedAllocations::start_marks(JNIEnv* jni, std::string* why) {
  jvmti::LocalFrame frame(jni, 4);
  jclass marks = jni->FindClass("java/lang/FasthprofMarks");
  jmethodID start = marks == nullptr ? nullptr : jni->GetStaticMethodID(marks, "start", "(IIIJJZ)V");
  new_pairs_ = marks == nullptr ? nullptr : jni->GetStaticMethodID(marks, "newPairs", "([I)[J");
  if (jvmti::clear_exception(jni) || start == nullptr || new_pairs_ == nullptr) {
    *why = "the tracker's marking class lacks its methods";
    return false;
  }
  const ObjectMarkLayout& m = mark_layout_;
  jni->CallStaticVoidMethod(marks, start, static_cast<jint>(m.id_shift), static_cast<jint>(m.id_bits),
                            static_cast<jint>(m.hash_shift), static_cast<jlong>(m.lock_mask),
                            static_cast<jlong>(m.unlocked_value), static_cast<jboolean>(walked_));
  if (jvmti::clear_exception(jni)) {
    *why = "the tracker's marking did not start";
    return false;
  }
  marks_class_ = static_cast<jclass>(jni->NewGlobalRef(marks));
  marking_ = marks_class_ != nullptr;
  return marking_;
}

// The pairs numbered since the last call, appended in ID order.
void InjectedAllocations::take_pairs(JNIEnv* jni) {
  if (!walked_ || marks_class_ == nullptr) return;
  jvmti::LocalFrame frame(jni, 4);
  jintArray first = jni->NewIntArray(1);
  if (first == nullptr) {
    jvmti::clear_exception(jni);
    return;
  }
  auto keys = static_cast<jlongArray>(jni->CallStaticObjectMethod(marks_class_, new_pairs_, first));
  if (jvmti::clear_exception(jni) || keys == nullptr) return;
  jint from = 0;
  jni->GetIntArrayRegion(first, 0, 1, &from);
  jsize count = jni->GetArrayLength(keys);
  if (from != static_cast<jint>(pair_keys_.size()) + 1) return;  // never: one caller, in order
  size_t at = pair_keys_.size();
  pair_keys_.resize(at + static_cast<size_t>(count));
  jni->GetLongArrayRegion(keys, 0, count, reinterpret_cast<jlong*>(pair_keys_.data() + at));
}

namespace {

// One marked object, on the VM thread at the walk's safepoint.
void tally_marked(void* data, uint64_t id, uintptr_t object) {
  auto* live = static_cast<InjectedAllocations::MarkedLive*>(data);
  if (id >= live->kinds.size() || live->kinds[id] == 0xff) {
    live->strays++;
    return;
  }
  uint8_t kind = live->kinds[id];
  live->objects[id]++;
  if (kind >= 1 && kind <= 5) {
    int32_t length = 0;
    std::memcpy(&length, reinterpret_cast<const char*>(object) + live->length_offset, sizeof(length));
    uint64_t size = static_cast<uint64_t>(live->array_base[kind]) +
                    (static_cast<uint64_t>(static_cast<uint32_t>(length)) << live->array_shift[kind]);
    live->bytes[id] += (size + live->align_mask) & ~live->align_mask;
  }
}

// The object traces' walk (walk_object_traces), on the VM thread at the walk's safepoint.
struct TraceWalk {
  const std::vector<uint32_t>* serials;  // by mark ID
  ObjectTraceList* out;
};

void list_object_trace(void* data, uint64_t id, uintptr_t object) {
  auto* walk = static_cast<TraceWalk*>(data);
  ObjectTraceList& out = *walk->out;
  uint32_t serial = id != 0 && id < walk->serials->size() ? (*walk->serials)[id] : 0;
  if (out.count < out.capacity) {
    uint32_t class_word = 0;
    std::memcpy(&class_word, reinterpret_cast<const char*>(object) + sizeof(uint64_t), sizeof(class_word));
    out.entries[out.count] = (uint64_t{class_word} << 32) | serial;
  }
  out.count++;
  out.named += serial != 0 ? 1 : 0;
}

}  // namespace

void InjectedAllocations::prepare_object_traces(JNIEnv* jni) {
  take_pairs(jni);
  const auto depth = static_cast<size_t>(std::max(context_.current_depth(), 0));
  std::vector<Site> sites;
  {
    std::lock_guard<std::mutex> lock(sites_mutex_);
    sites = sites_;
  }
  // Each mark ID's trace, interned and written now (the records precede the dump's).
  size_t ids = mark_ids(sites.size());
  dump_serials_.assign(ids, 0);
  std::vector<StackFrame> trace;
  for (size_t id = 1; id < ids; ++id) {
    // Naming a trace's new frames makes local references (their classes) that live until here.
    jvmti::LocalFrame frame(jni, static_cast<jint>(depth) + 16);
    uint64_t key = mark_key(id);
    auto index = static_cast<uint32_t>(key);
    if (index >= sites.size()) continue;
    trace.clear();
    walked_trace(sites[index], static_cast<uint32_t>(key >> 32), depth, &trace);
    dump_serials_[id] = context_.writer->intern_trace(0, trace);
  }
  context_.writer->write_unwritten_traces();
}

bool InjectedAllocations::walk_object_traces(ObjectTraceList* out, std::string* why) {
  TraceWalk walk{&dump_serials_, out};
  MarkWalkFigures figures;
  return walk_marked_objects(context_.jvmti, mark_layout_, &list_object_trace, &walk, &figures, why, true);
}

bool InjectedAllocations::walk_marked(JNIEnv* jni, MarkedLive* out, std::string* why) {
  take_pairs(jni);
  {
    std::lock_guard<std::mutex> lock(sites_mutex_);
    size_t ids = mark_ids(sites_.size());
    out->kinds.assign(ids, 0xff);
    for (size_t id = 1; id < ids; ++id) {
      auto index = static_cast<uint32_t>(mark_key(id));
      if (index < sites_.size()) out->kinds[id] = static_cast<uint8_t>(sites_[index].kind);
    }
    out->objects.assign(ids, 0);
    out->bytes.assign(ids, 0);
  }
  for (int kind = 1; kind <= 5; ++kind) {
    const ArrayLayout& layout = sizes_.array_layout(static_cast<SiteKind>(kind));
    out->array_base[kind] = layout.base;
    out->array_shift[kind] = layout.shift;
  }
  out->align_mask = sizes_.alignment() - 1;
  out->length_offset = mark_layout_.array_length_offset;
  return walk_marked_objects(context_.jvmti, mark_layout_, &tally_marked, out, &out->figures, why);
}

void InjectedAllocations::add_marked_live(const MarkedLive& live, AllocationRecorder& recorder) {
  const auto depth = static_cast<size_t>(std::max(context_.current_depth(), 0));
  stray_marks_ = live.strays;
  std::vector<StackFrame> trace;
  for (size_t id = 1; id < live.objects.size(); ++id) {
    if (live.objects[id] == 0) continue;
    uint64_t key = mark_key(id);
    auto index = static_cast<uint32_t>(key);
    auto context = static_cast<uint32_t>(key >> 32);
    const Resolved* site = index < resolved_.size() ? &resolved_[index] : nullptr;
    if (site == nullptr || site->class_serial == 0) {
      unresolved_live_ += live.objects[id];
      continue;
    }
    Site described;
    {
      std::lock_guard<std::mutex> lock(sites_mutex_);
      described = sites_[index];
    }
    trace.clear();
    walked_trace(described, context, depth, &trace);
    SiteIdentity identity{site->class_serial, context_.writer->intern_trace(0, trace), site->array_kind};
    uint64_t bytes = described.kind == SiteKind::kInstance ? live.objects[id] * site->instance_size : live.bytes[id];
    recorder.add_live_counted(identity, live.objects[id], bytes);
  }
}

}  // namespace fasthprof
