// Allocation sites in objects' mark words (agent/sites/object_marks.h).
#include "sites/object_marks.h"

#include <optional>

#include "base/clock.h"
#include "fork_dump/elf_symbols.h"
#include "hotspot_structs.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// HotSpot's ObjectClosure as the Itanium C++ ABI lays it out (memory/iterator.hpp, JDK 17 and 25:
// Closure and StackObj have no virtual function, ObjectClosure one): the first word points at a
// table whose one slot is do_object(oop), an oop being the object's address in a product build.
// No virtual destructor: HotSpot's has none (a second slot would not be HotSpot's shape). Runs on the VM thread at the walk's safepoint: no allocation, no lock.
class MarkClosure final {
 public:
  MarkClosure(const ObjectMarkLayout& layout, MarkVisitor visit, void* context, bool every_object)
      : layout_(layout), visit_(visit), context_(context), every_object_(every_object) {}

  virtual void do_object(uintptr_t object) noexcept;

  uint64_t objects = 0, marked = 0, unreadable = 0, stack_locked = 0, inflated = 0;

 private:
  // The unlocked header of an object whose mark is `mark`, or nothing when it cannot be read.
  std::optional<uint64_t> header_of(uint64_t mark) const noexcept;

  const ObjectMarkLayout& layout_;
  MarkVisitor visit_;
  void* context_;
  bool every_object_;
};

std::optional<uint64_t> MarkClosure::header_of(uint64_t mark) const noexcept {
  const ObjectMarkLayout& l = layout_;
  uint64_t lock = mark & l.lock_mask;
  if (lock == l.unlocked_value) return mark;
  uintptr_t holder = 0;
  int64_t at = -1;
  if (lock == l.locked_value) {
    if (l.stack_locks_in_place) return mark;
    holder = static_cast<uintptr_t>(mark & ~l.lock_mask);  // the owner's BasicLock
    at = l.stack_lock_header;
  } else if (lock == l.monitor_value) {
    if (l.monitors_in_place) return mark;
    holder = static_cast<uintptr_t>(mark ^ l.monitor_value);  // the ObjectMonitor
    at = l.monitor_header;
  } else {
    return std::nullopt;  // marked (a collection's forwarding): not at this safepoint
  }
  if (holder == 0 || at < 0) return std::nullopt;  // 0: being inflated
  uint64_t header = *reinterpret_cast<const volatile uint64_t*>(holder + static_cast<uintptr_t>(at));
  if ((header & l.lock_mask) != l.unlocked_value) return std::nullopt;
  return header;
}

void MarkClosure::do_object(uintptr_t object) noexcept {
  ++objects;
  uint64_t mark = *reinterpret_cast<const volatile uint64_t*>(object);
  std::optional<uint64_t> header = header_of(mark);
  if (!header) {
    ++unreadable;
    if (every_object_) visit_(context_, 0, object);
    return;
  }
  uint64_t id = *header >> layout_.id_shift;
  if (id == 0) {
    if (every_object_) visit_(context_, 0, object);
    return;
  }
  ++marked;
  uint64_t lock = mark & layout_.lock_mask;
  stack_locked += lock == layout_.locked_value ? 1 : 0;
  inflated += lock == layout_.monitor_value ? 1 : 0;
  visit_(context_, id, object);
}

// The collector's heap class, its object_iterate and the vtable the heap object must have.
struct HeapClass {
  const char* collector;
  const char* vtable;
  const char* object_iterate;
};

std::optional<HeapClass> heap_class(int jdk, std::string* why) {
  if (hotspot_bool_flag("UseG1GC").value_or(false)) {
    return HeapClass{"G1", "_ZTV15G1CollectedHeap", "_ZN15G1CollectedHeap14object_iterateEP13ObjectClosure"};
  }
  if (hotspot_bool_flag("UseParallelGC").value_or(false)) {
    return HeapClass{"Parallel", "_ZTV20ParallelScavengeHeap",
                     "_ZN20ParallelScavengeHeap14object_iterateEP13ObjectClosure"};
  }
  if (hotspot_bool_flag("UseSerialGC").value_or(false)) {
    // JDK 17's SerialHeap inherits GenCollectedHeap's; JDK 25's SerialHeap has its own.
    return HeapClass{"Serial", "_ZTV10SerialHeap",
                     jdk == 17 ? "_ZN16GenCollectedHeap14object_iterateEP13ObjectClosure"
                               : "_ZN10SerialHeap14object_iterateEP13ObjectClosure"};
  }
  if (hotspot_bool_flag("UseZGC").value_or(false)) {
    *why = "ZGC (marks are walked under the Serial, Parallel and G1 collectors only)";
  } else if (hotspot_bool_flag("UseShenandoahGC").value_or(false)) {
    *why = "Shenandoah (marks are walked under the Serial, Parallel and G1 collectors only)";
  } else if (hotspot_bool_flag("UseEpsilonGC").value_or(false)) {
    *why = "Epsilon (marks are walked under the Serial, Parallel and G1 collectors only)";
  } else {
    *why = "the collector is not Serial, Parallel or G1";
  }
  return std::nullopt;
}

// The vtable of the heap object's class, as libjvm.so's symbols name it.
struct HeapVtable {
  const ElfSymbols& symbols;
  uint64_t base;
  void* const* slots;  // from the table's start: offset to top, type info, then the functions
  uint64_t count;

  int times(void* function) const {
    int matches = 0;
    for (uint64_t i = 2; i < count; ++i) matches += slots[i] == function ? 1 : 0;
    return matches;
  }

  // CollectedHeap::ensure_parsability(bool), or the heap class's own where it overrides it: the one
  // of these the table holds, once; null otherwise.
  void* ensure_parsability() const {
    void* found = nullptr;
    int matches = 0;
    for (const char* name : {"_ZN13CollectedHeap18ensure_parsabilityEb", "_ZN15G1CollectedHeap18ensure_parsabilityEb",
                             "_ZN20ParallelScavengeHeap18ensure_parsabilityEb",
                             "_ZN16GenCollectedHeap18ensure_parsabilityEb", "_ZN10SerialHeap18ensure_parsabilityEb"}) {
      std::optional<ElfSymbol> symbol = symbols.find(name);
      if (!symbol) continue;
      void* function = reinterpret_cast<void*>(base + symbol->value);
      int here = times(function);
      if (here > 0) found = function;
      matches += here;
    }
    return matches == 1 ? found : nullptr;
  }
};

// Finds the collector's object_iterate and checks it against the heap object and HotSpot's
// ObjectClosure (the header says how). False with *why.
bool resolve_heap(ObjectMarkLayout* layout, std::string* why) {
  std::optional<HeapClass> heap = heap_class(layout->jdk, why);
  if (!heap) return false;
  layout->collector = heap->collector;
  auto collected_heap = hotspot_static_address("Universe", "_collectedHeap");
  if (!collected_heap) {
    *why = "the VM does not list Universe::_collectedHeap";
    return false;
  }
  void* heap_object = *reinterpret_cast<void* const*>(*collected_heap);
  std::optional<LoadedObject> jvm = loaded_object("libjvm.so");
  if (heap_object == nullptr || !jvm) {
    *why = heap_object == nullptr ? "the VM has no heap yet" : "no libjvm.so is loaded (not HotSpot?)";
    return false;
  }
  std::string error;
  std::optional<ElfSymbols> symbols = ElfSymbols::open(jvm->path, &error);
  if (!symbols || symbols->table() != ".symtab") {
    *why = symbols ? jvm->path + " has no full symbol table (stripped)" : "cannot read " + jvm->path + ": " + error;
    return false;
  }
  // 3 words: offset to top, type info, do_object.
  std::optional<ElfSymbol> closure = symbols->find("_ZTV31IterateThroughHeapObjectClosure");
  if (!closure || closure->size != 3 * sizeof(void*)) {
    *why = "libjvm.so's ObjectClosure is not one virtual function (IterateThroughHeapObjectClosure's vtable)";
    return false;
  }
  std::optional<ElfSymbol> vtable = symbols->find(heap->vtable);
  std::optional<ElfSymbol> iterate = symbols->find(heap->object_iterate);
  if (!vtable || !iterate) {
    *why = jvm->path + " has no symbol " + (vtable ? heap->object_iterate : heap->vtable);
    return false;
  }
  auto* slots = reinterpret_cast<void* const*>(jvm->base + vtable->value);
  void* function = reinterpret_cast<void*>(jvm->base + iterate->value);
  if (*reinterpret_cast<void* const* const*>(heap_object) != slots + 2) {
    *why = std::string("the heap object is not a ") + heap->vtable + " (its first word is another vtable)";
    return false;
  }
  HeapVtable table{*symbols, jvm->base, slots, vtable->size / sizeof(void*)};
  int matches = table.times(function);
  if (matches != 1) {
    *why = std::string(heap->vtable) + " holds " + heap->object_iterate + " " + std::to_string(matches) +
           " times, not once";
    return false;
  }
  void* parsable = table.ensure_parsability();
  if (parsable == nullptr) {
    *why = std::string(heap->vtable) + " holds no one ensure_parsability";
    return false;
  }
  layout->heap = heap_object;
  layout->object_iterate = reinterpret_cast<void (*)(void*, void*)>(function);
  layout->ensure_parsability = reinterpret_cast<void (*)(void*, bool)>(parsable);
  return true;
}

// The markWord constants and the flags that change what a mark holds. False with *why.
bool read_mark_bits(ObjectMarkLayout* l, std::string* why) {
  const char* names[] = {"markWord::hash_shift", "markWord::hash_bits", "markWord::hash_mask",
                         "markWord::lock_mask_in_place", "markWord::unlocked_value", "markWord::locked_value",
                         "markWord::monitor_value", "markWord::marked_value"};
  uint64_t values[8];
  for (int i = 0; i < 8; ++i) {
    std::optional<uint64_t> value = hotspot_long_constant(names[i]);
    if (!value) {
      *why = std::string("the VM does not list ") + names[i];
      return false;
    }
    values[i] = *value;
  }
  l->hash_shift = static_cast<int>(values[0]);
  l->id_shift = static_cast<int>(values[0] + values[1]);
  l->id_bits = 64 - l->id_shift;
  l->hash_mask = values[2];
  l->lock_mask = values[3];
  l->unlocked_value = values[4];
  l->locked_value = values[5];
  l->monitor_value = values[6];
  l->marked_value = values[7];
  if (l->id_bits < 8 || l->id_bits > 32) {
    *why = "the mark has " + std::to_string(l->id_bits) + " bits above the hash, not 8 to 32";
    return false;
  }
  if (hotspot_bool_flag("UseCompactObjectHeaders").value_or(false)) {
    *why = "-XX:+UseCompactObjectHeaders (the mark's upper bits hold the class)";
    return false;
  }
  if (hotspot_bool_flag("UseBiasedLocking").value_or(false)) {
    *why = "-XX:+UseBiasedLocking (a biased mark holds a thread in its upper bits)";
    return false;
  }
  return true;
}

// Where a locked object's header is: LockingMode (JDK 21+; JDK 17 locks on the stack) and the
// offsets the VM lists. A missing offset leaves -1: such objects are counted unreadable.
void read_lock_layout(ObjectMarkLayout* l) {
  std::optional<int32_t> mode = hotspot_int_flag("LockingMode");
  std::optional<int32_t> lightweight = hotspot_int_constant("LM_LIGHTWEIGHT");
  l->stack_locks_in_place = mode && lightweight && *mode == *lightweight;
  l->monitors_in_place = hotspot_bool_flag("UseObjectMonitorTable").value_or(false);
  for (const char* field : {"_displaced_header", "_metadata"}) {
    if (auto at = hotspot_field_offset("BasicLock", field)) l->stack_lock_header = static_cast<int64_t>(*at);
  }
  for (const char* field : {"_header", "_metadata"}) {
    if (auto at = hotspot_field_offset("ObjectMonitor", field)) l->monitor_header = static_cast<int64_t>(*at);
  }
}

// The array length's offset from the compressed class pointers flag, checked against the sizes of
// byte arrays of lengths 0 to 40: the elements start right after the length (JDK 22+), or at the
// next word (JDK 17), and the size is rounded up to the object alignment.
bool read_array_layout(ObjectMarkLayout* l, jvmtiEnv* jvmti, JNIEnv* jni, std::string* why) {
  std::optional<bool> compressed = hotspot_bool_flag("UseCompressedClassPointers");
  if (!compressed) {
    *why = "the VM does not list UseCompressedClassPointers";
    return false;
  }
  l->array_length_offset = *compressed ? 12 : 16;
  jlong sizes[41];
  for (jsize length = 0; length <= 40; ++length) {
    jbyteArray array = jni->NewByteArray(length);
    if (array == nullptr) {
      jvmti::clear_exception(jni);
      *why = "cannot make a byte array to measure";
      return false;
    }
    jvmtiError error = jvmti->GetObjectSize(array, &sizes[length]);
    jni->DeleteLocalRef(array);
    if (error != JVMTI_ERROR_NONE) {
      *why = "GetObjectSize: " + jvmti::error_name(error);
      return false;
    }
  }
  auto align = [](jlong bytes, jlong to) { return (bytes + to - 1) / to * to; };
  for (jlong base : {jlong{l->array_length_offset} + 4, align(l->array_length_offset + 4, 8)}) {
    for (jlong alignment = 8; alignment <= 256; alignment *= 2) {
      bool fits = true;
      for (jlong length = 0; length <= 40 && fits; ++length) fits = sizes[length] == align(base + length, alignment);
      if (fits) return true;
    }
  }
  *why = "byte arrays' sizes do not fit a length at offset " + std::to_string(l->array_length_offset) +
         " (byte[0] is " + std::to_string(sizes[0]) + " bytes)";
  return false;
}

// The walk's state, for its run at the safepoint.
struct Walk {
  const ObjectMarkLayout* layout;
  MarkClosure* closure;
  uint64_t walk_started = 0;
  uint64_t walk_ns = 0;
};

// On the VM thread at the safepoint (jvmti::run_at_safepoint): the heap made parsable (TLABs' free
// ends filled, as HotSpot's own iterations do first), then the collector's own iteration over the
// whole heap.
void walk_heap(void* data) {
  auto* walk = static_cast<Walk*>(data);
  walk->walk_started = monotonic_ns();
  walk->layout->ensure_parsability(walk->layout->heap, false);
  walk->layout->object_iterate(walk->layout->heap, walk->closure);
  walk->walk_ns = monotonic_ns() - walk->walk_started;
}

}  // namespace

ObjectMarkLayout read_object_mark_layout(jvmtiEnv* jvmti, JNIEnv* jni) {
  ObjectMarkLayout layout;
  layout.jdk = jvmti::vm_major_version(jvmti);
  std::string why;
  if (sizeof(void*) != 8) {
    why = "not a 64-bit VM";
  } else if (layout.jdk != 17 && layout.jdk != 25) {
    why = "JDK " + std::to_string(layout.jdk) + " (marks are read on JDK 17 and 25, the releases they are tested on)";
  } else if (read_mark_bits(&layout, &why) && read_array_layout(&layout, jvmti, jni, &why) &&
             resolve_heap(&layout, &why)) {
    read_lock_layout(&layout);
    layout.usable = true;
    return layout;
  }
  layout.why_not = why;
  return layout;
}

bool walk_marked_objects(jvmtiEnv* jvmti, const ObjectMarkLayout& layout, MarkVisitor visit, void* context,
                         MarkWalkFigures* figures, std::string* why, bool every_object) {
  if (!layout.usable) {
    *why = "marks are not readable here: " + layout.why_not;
    return false;
  }
  MarkClosure closure(layout, visit, context, every_object);
  Walk walk{&layout, &closure};
  uint64_t before = monotonic_ns();
  bool ran = false;
  jvmtiError error = jvmti::run_at_safepoint(jvmti, &walk_heap, &walk, &ran);
  figures->pause_ns = monotonic_ns() - before;
  if (error != JVMTI_ERROR_NONE) {
    *why = "FollowReferences: " + jvmti::error_name(error);
    return false;
  }
  if (!ran) {
    *why = "the heap iteration made no callback to walk in";
    return false;
  }
  figures->objects = closure.objects;
  figures->marked = closure.marked;
  figures->unreadable = closure.unreadable;
  figures->stack_locked = closure.stack_locked;
  figures->inflated = closure.inflated;
  figures->walk_ns = walk.walk_ns;
  figures->to_walk_ns = walk.walk_started - before;
  return true;
}

}  // namespace fasthprof
