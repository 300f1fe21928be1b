#include "heap/heap_walk.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/clock.h"
#include "base/flat_map.h"
#include "base/ids.h"
#include "base/stderr_line.h"
#include "entry_guard.h"
#include "heap/marked_object_tags.h"
#include "sites/allocation_traces.h"

namespace fasthprof {
namespace {

std::atomic<uint64_t> heap_dump_ids{0};

// Length and size of an object reported (as a referee) but not yet walked (as a referrer):
// JVMTI gives both only with the reference to it.
struct Pending {
  int64_t length = -1;
  uint64_t size = 0;
};

// Object IDs are handed out in sequence; a multiplicative hash spreads them over the table
// (FlatMap keeps the low 32 bits: the high half of the product, where every bit of the ID counts).
struct IdHash {
  uint64_t operator()(uint64_t id) const { return (id * 0x9E3779B97F4A7C15u) >> 32; }
};

struct WalkState {
  const HeapWalkSetup* setup = nullptr;
  HeapDumpAssembler* out = nullptr;
  uint64_t ids_before_walk = 0;  // IDs up to this were set before the walk
  // The index of the last ID handed out. The walk is the only taker of heap-dump IDs while it
  // runs (the dump's thread waits in FollowReferences), so the VM thread counts here without an
  // atomic read-modify-write per object and stores the count back when the walk returns.
  uint64_t last_id_index = 0;
  // Object arrays (every object in text mode) reported but not walked yet, looked up once per
  // object array walked (a few hundred entries at a time in the bench's binary dumps).
  FlatMap<uint64_t, Pending, IdHash> pending;
  std::unordered_set<uint64_t> walked_pretagged;  // tagged before the walk, already walked
  std::vector<std::pair<uint64_t, uint64_t>> class_instances;  // (ID, size)
  std::unordered_set<uint64_t> class_instance_seen;
  uint64_t jni_globals = 0;
  uint64_t objects = 0;
  size_t peak_pending = 0;
  uint64_t started_ns = 0;  // monotonic
  uint64_t last_progress_ns = 0;
  bool printed_progress = false;
  bool failed = false;  // a callback threw: the walk was aborted
};

constexpr const char* kWalkFailed = "the heap walk was stopped and this heap dump is left out";

// Runs a heap callback's body; if it throws, the walk stops (JVMTI_VISIT_ABORT) and is marked failed.
template <typename Body>
jint guard_walk(WalkState& state, Body&& body) {
  return guard_entry<jint>("a heap walk callback", kWalkFailed, JVMTI_VISIT_ABORT, std::forward<Body>(body),
                           [&state] { state.failed = true; });
}

bool set_before_walk(const WalkState& state, uint64_t id) {
  return id_space(id) != IdSpace::kFirstHeapDumpTag || id_index(id) <= state.ids_before_walk;
}

// Trace of an object's allocation: with heap=all, objects tagged by allocation tracking (ids.h
// 0x10-0x1F) or, counted by injection, tagged for their header's mark before the walk
// (marked_object_tags.h) name their allocation trace; every other object the empty trace.
uint32_t allocation_trace_of(const WalkState& state, uint64_t object_id) {
  if (state.setup->marked_tags != nullptr) {
    if (uint32_t serial = state.setup->marked_tags->trace_serial(object_id)) return serial;
  }
  IdSpace space = id_space(object_id);
  if (space < IdSpace::kFirstAllocationTag || space > IdSpace::kLastAllocationTag) return kFirstTraceSerial;
  const AllocationTraces* traces = state.setup->allocation_traces;
  uint32_t serial = 0;
  if (traces == nullptr || !traces->trace_serial_of_tag(object_id, &serial) || serial == 0) return kFirstTraceSerial;
  return serial;
}

void print_progress(WalkState& state) {
  constexpr uint64_t kSecond = 1000000000u;
  uint64_t now = monotonic_ns();
  if (now - state.started_ns < 3 * kSecond || now - state.last_progress_ns < 2 * kSecond) return;
  state.last_progress_ns = now;
  state.printed_progress = true;
  const HeapDumpCounts& counts = state.out->counts();
  uint64_t bytes = state.setup->bytes_written ? state.setup->bytes_written() : 0;
  char line[160];
  int n = std::snprintf(line, sizeof line, "fasthprof: heap dump: %llu objects, %llu MB so far (%.1f s)\n",
                        static_cast<unsigned long long>(counts.objects()),
                        static_cast<unsigned long long>(bytes >> 20),
                        static_cast<double>(now - state.started_ns) / 1e9);
  if (n > 0) write_stderr(std::string_view(line, std::min(static_cast<size_t>(n), sizeof line - 1)));
}

// Whether the walk carries an object's length and size from the reference to it (visit_reference):
// every object's in text mode, an object array's otherwise.
bool carries_length(const WalkState& state, const ClassLayout* layout) {
  return state.setup->text || (layout != nullptr && layout->description->is_array &&
                               layout->description->element_type == BasicType::kObject);
}

void begin_walked_object(WalkState& state, uint64_t id, uint64_t class_id) {
  if (id == state.setup->holder_id && id != 0) {
    state.out->skip_object();
    return;
  }
  // One layout lookup per object, shared with the assembler.
  const ClassLayout* layout = state.setup->classes->find(class_id);
  Pending carried;
  if (carries_length(state, layout)) {
    if (const Pending* found = state.pending.find(id)) {
      carried = *found;
      state.pending.erase(id);
      if (set_before_walk(state, id)) state.walked_pretagged.insert(id);
    }
  }
  state.out->begin_object(id, class_id, layout, allocation_trace_of(state, id), carried.length, carried.size);
  if ((++state.objects & 0xFFFF) == 0 && state.setup->progress) print_progress(state);
}

void root(WalkState& state, jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo* info, uint64_t id) {
  HeapDumpAssembler& out = *state.out;
  auto stack_root = [&](jlong thread_tag, jint depth, bool java_frame) {
    auto found = state.setup->threads->find(static_cast<uint64_t>(thread_tag));
    if (thread_tag == 0 || found == state.setup->threads->end()) {
      out.root_unknown(id);  // e.g. an unmounted virtual thread: no thread object in the dump
      return;
    }
    int32_t frame = depth >= 0 && depth < found->second.frames ? depth : -1;
    if (java_frame) out.root_java_frame(id, found->second.serial, frame);
    else out.root_jni_local(id, found->second.serial, frame);
  };
  switch (kind) {
    case JVMTI_HEAP_REFERENCE_JNI_GLOBAL:
      if (id != state.setup->holder_id) out.root_jni_global(id, ++state.jni_globals, allocation_trace_of(state, id));
      break;
    case JVMTI_HEAP_REFERENCE_SYSTEM_CLASS:
      out.root_system_class(id);
      break;
    case JVMTI_HEAP_REFERENCE_MONITOR:
      out.root_monitor(id);
      break;
    case JVMTI_HEAP_REFERENCE_THREAD:
      // Threads whose stacks the dump took have their ROOT THREAD OBJECT already.
      if (state.setup->threads->count(id) == 0) out.root_unknown(id);
      break;
    case JVMTI_HEAP_REFERENCE_STACK_LOCAL:
      stack_root(info->stack_local.thread_tag, info->stack_local.depth, true);
      break;
    case JVMTI_HEAP_REFERENCE_JNI_LOCAL:
      stack_root(info->jni_local.thread_tag, info->jni_local.depth, false);
      break;
    default:
      out.root_unknown(id);
      break;
  }
}

jint visit_reference(WalkState& state, jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo* info,
                     jlong class_tag, jlong referrer_class_tag, jlong size, jlong* tag_ptr, jlong* referrer_tag_ptr,
                     jint length) {
  bool fresh = *tag_ptr == 0;
  if (fresh) *tag_ptr = static_cast<jlong>(make_id(IdSpace::kFirstHeapDumpTag, ++state.last_id_index));
  uint64_t id = static_cast<uint64_t>(*tag_ptr);
  uint64_t class_id = static_cast<uint64_t>(class_tag);

  if (class_id == state.setup->class_class_id) {
    // A class object: its CLASS DUMP is written already, unless it has none (int.class).
    if (state.setup->classes->find(id) == nullptr && state.class_instance_seen.insert(id).second) {
      state.class_instances.emplace_back(id, static_cast<uint64_t>(size));
    }
  } else if (length >= 0 || state.setup->text) {
    bool needed = state.setup->text || carries_length(state, state.setup->classes->find(class_id));
    if (needed && (fresh || (set_before_walk(state, id) && state.walked_pretagged.count(id) == 0))) {
      state.pending.try_emplace(id, Pending{length, static_cast<uint64_t>(size)});
      if (state.pending.size() > state.peak_pending) state.peak_pending = state.pending.size();
    }
  }

  if (referrer_tag_ptr == nullptr) {
    root(state, kind, info, id);
    return JVMTI_VISIT_OBJECTS;
  }
  if (static_cast<uint64_t>(referrer_class_tag) == state.setup->class_class_id) return JVMTI_VISIT_OBJECTS;
  uint64_t referrer = static_cast<uint64_t>(*referrer_tag_ptr);
  switch (kind) {
    case JVMTI_HEAP_REFERENCE_CLASS:
      begin_walked_object(state, referrer, static_cast<uint64_t>(referrer_class_tag));
      break;
    case JVMTI_HEAP_REFERENCE_FIELD:
      if (state.out->current_object() == referrer) state.out->field(info->field.index, id);
      break;
    case JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT:
      if (state.out->current_object() == referrer) state.out->element(info->array.index, id);
      break;
    default:
      break;
  }
  return JVMTI_VISIT_OBJECTS;
}

jint JNICALL on_reference(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo* info, jlong class_tag,
                          jlong referrer_class_tag, jlong size, jlong* tag_ptr, jlong* referrer_tag_ptr,
                          jint length, void* user_data) {
  WalkState& state = *static_cast<WalkState*>(user_data);
  return guard_walk(state, [&] {
    return visit_reference(state, kind, info, class_tag, referrer_class_tag, size, tag_ptr, referrer_tag_ptr, length);
  });
}

BasicType basic_type_of(jvmtiPrimitiveType type) {
  switch (type) {
    case JVMTI_PRIMITIVE_TYPE_BOOLEAN: return BasicType::kBoolean;
    case JVMTI_PRIMITIVE_TYPE_BYTE: return BasicType::kByte;
    case JVMTI_PRIMITIVE_TYPE_CHAR: return BasicType::kChar;
    case JVMTI_PRIMITIVE_TYPE_SHORT: return BasicType::kShort;
    case JVMTI_PRIMITIVE_TYPE_INT: return BasicType::kInt;
    case JVMTI_PRIMITIVE_TYPE_LONG: return BasicType::kLong;
    case JVMTI_PRIMITIVE_TYPE_FLOAT: return BasicType::kFloat;
    case JVMTI_PRIMITIVE_TYPE_DOUBLE: return BasicType::kDouble;
  }
  return BasicType::kInt;
}

uint64_t bits_of(jvalue value, jvmtiPrimitiveType type) {
  switch (type) {
    case JVMTI_PRIMITIVE_TYPE_BOOLEAN: return value.z ? 1 : 0;
    case JVMTI_PRIMITIVE_TYPE_BYTE: return static_cast<uint8_t>(value.b);
    case JVMTI_PRIMITIVE_TYPE_CHAR: return value.c;
    case JVMTI_PRIMITIVE_TYPE_SHORT: return static_cast<uint16_t>(value.s);
    case JVMTI_PRIMITIVE_TYPE_INT: return static_cast<uint32_t>(value.i);
    case JVMTI_PRIMITIVE_TYPE_LONG: return static_cast<uint64_t>(value.j);
    case JVMTI_PRIMITIVE_TYPE_FLOAT: {
      uint32_t raw = 0;
      std::memcpy(&raw, &value.f, sizeof raw);
      return raw;
    }
    case JVMTI_PRIMITIVE_TYPE_DOUBLE: {
      uint64_t raw = 0;
      std::memcpy(&raw, &value.d, sizeof raw);
      return raw;
    }
  }
  return 0;
}

jint JNICALL on_primitive_field(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo* info,
                                jlong /*object_class_tag*/, jlong* object_tag_ptr, jvalue value,
                                jvmtiPrimitiveType value_type, void* user_data) {
  WalkState& state = *static_cast<WalkState*>(user_data);
  if (kind != JVMTI_HEAP_REFERENCE_FIELD || *object_tag_ptr == 0) return 0;
  if (state.out->current_object() != static_cast<uint64_t>(*object_tag_ptr)) return 0;
  return guard_walk(state, [&] {
    state.out->primitive_field(info->field.index, bits_of(value, value_type));
    return 0;
  });
}

jint JNICALL on_array_values(jlong /*class_tag*/, jlong /*size*/, jlong* tag_ptr, jint element_count,
                             jvmtiPrimitiveType element_type, const void* elements, void* user_data) {
  WalkState& state = *static_cast<WalkState*>(user_data);
  if (*tag_ptr == 0 || state.out->current_object() != static_cast<uint64_t>(*tag_ptr)) return 0;
  return guard_walk(state, [&] {
    state.out->primitive_array(basic_type_of(element_type), elements, static_cast<uint64_t>(element_count));
    return 0;
  });
}

// Which heap-dump tags clear_heap_dump_tags() removes, and how many it did.
struct ClearRange {
  uint64_t first, last;  // ID indexes, inclusive
  uint64_t cleared = 0;
};

jint JNICALL on_clear_tag(jlong /*class_tag*/, jlong /*size*/, jlong* tag_ptr, jint /*length*/, void* user_data) {
  auto& range = *static_cast<ClearRange*>(user_data);
  uint64_t tag = static_cast<uint64_t>(*tag_ptr);
  IdSpace space = id_space(tag);
  if (space >= IdSpace::kFirstHeapDumpTag && space <= IdSpace::kLastHeapDumpTag && id_index(tag) >= range.first &&
      id_index(tag) <= range.last) {
    *tag_ptr = 0;
    ++range.cleared;
  }
  return 0;
}

}  // namespace

uint64_t next_heap_dump_id() { return make_id(IdSpace::kFirstHeapDumpTag, heap_dump_ids.fetch_add(1) + 1); }

uint64_t last_heap_dump_id() { return heap_dump_ids.load(); }

uint64_t reserve_heap_dump_ids(uint64_t count) { return heap_dump_ids.fetch_add(count); }

HeapWalkResult run_heap_walk(jvmtiEnv* jvmti, const HeapWalkSetup& setup) {
  WalkState state;
  state.setup = &setup;
  state.out = setup.assembler;
  state.ids_before_walk = state.last_id_index = last_heap_dump_id();
  state.started_ns = state.last_progress_ns = monotonic_ns();

  jvmtiHeapCallbacks callbacks{};
  callbacks.heap_reference_callback = &on_reference;
  if (setup.primitive_fields) callbacks.primitive_field_callback = &on_primitive_field;
  if (setup.primitive_arrays) callbacks.array_primitive_value_callback = &on_array_values;

  HeapWalkResult result;
  result.error = jvmti->FollowReferences(0, nullptr, nullptr, &callbacks, &state);
  heap_dump_ids.store(state.last_id_index);
  state.out->end_object();
  for (const auto& [id, size] : state.class_instances) state.out->class_instance(id, size);
  result.class_instances = state.class_instances.size();
  result.peak_pending = state.peak_pending;
  result.failed = state.failed;
  result.seconds = seconds_since(state.started_ns);
  return result;
}

double clear_heap_dump_tags(jvmtiEnv* jvmti, uint64_t* cleared, uint64_t first, uint64_t last) {
  uint64_t started = monotonic_ns();
  jvmtiHeapCallbacks callbacks{};
  callbacks.heap_iteration_callback = &on_clear_tag;
  ClearRange range{first, last};
  jvmti->IterateThroughHeap(JVMTI_HEAP_FILTER_UNTAGGED, nullptr, &callbacks, &range);
  *cleared = range.cleared;
  return seconds_since(started);
}

}  // namespace fasthprof
