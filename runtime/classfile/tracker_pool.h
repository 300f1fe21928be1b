// The constant-pool entries the class rewriter (class_rewriter.cpp) appends for the tracker: its
// class, the names and descriptors of the calls a class needs, their Methodrefs; and the pool
// written again with them. Internal to the rewriter.
#pragma once

#include <cstdint>
#include <vector>

#include "classfile/class_file.h"
#include "classfile/class_rewriter.h"

namespace fasthprof::class_file {

// The tracker's Methodrefs, appended to the pool; 0 for those not needed.
struct TrackerRefs {
  uint16_t enter = 0, exit = 0, alloc = 0, alloc_array = 0, alloc_multi = 0, at = 0, alloc_class = 0, alloc_clone = 0;
  uint16_t marked = 0, marked_multi = 0, marked_class = 0, marked_clone = 0;
};

// A mark call after the instruction at original offset `after` (RewritePlan::marks).
struct MarkPoint {
  uint32_t after = 0;
  uint16_t site_constant = 0, method_ref = 0;
  uint8_t dimensions = 0;  // a multianewarray's of 2 or more (pushed before the site), else 0
};

// What CodeRewriter::rewrite injects into one method, as pool indexes.
struct Injection {
  bool calls = false;                   // entry and exit calls
  uint16_t id_index = 0, enter_ref = 0, exit_ref = 0;
  const uint16_t* site_constants = nullptr;  // one per allocation instruction, in code order
  size_t site_count = 0;                // 0: no allocation calls
  uint16_t alloc_ref = 0, alloc_array_ref = 0, alloc_multi_ref = 0;
  uint16_t at_ref = 0;                  // 0: no position calls before invokes
  uint16_t alloc_class_ref = 0, alloc_clone_ref = 0;
  const MarkPoint* marks = nullptr;     // in any order; none without RewritePlan::marks
  size_t mark_count = 0;
};

// What one class needs of the tracker.
struct TrackerNeeds {
  bool calls = false, news = false, arrays = false, multi = false, positions = false, classes = false, clones = false;
  bool marked = false, marked_multi = false, marked_class = false, marked_clone = false;  // RewritePlan::marks
};

// The tracker's class, names, descriptors, NameAndTypes and Methodrefs, as far as needed.
inline TrackerRefs append_tracker(PoolAppender& pool, const TrackerCalls& tracker, TrackerNeeds needs) {
  uint16_t class_utf8 = pool.utf8(tracker.class_name);
  uint16_t class_entry = pool.entry(kClass, class_utf8);
  uint16_t enter_utf8 = 0, exit_utf8 = 0, alloc_utf8 = 0, array_utf8 = 0, int_void = 0, int_int_void = 0;
  if (needs.calls) {
    enter_utf8 = pool.utf8(tracker.enter_name);
    exit_utf8 = pool.utf8(tracker.exit_name);
  }
  if (needs.calls || needs.news || needs.positions) int_void = pool.utf8("(I)V");
  if (needs.news) alloc_utf8 = pool.utf8(tracker.alloc_name);
  if (needs.arrays) {
    array_utf8 = pool.utf8(tracker.alloc_array_name);
    int_int_void = pool.utf8("(II)V");
  }
  TrackerRefs refs;
  if (needs.calls) {  // NameAndTypes then Methodrefs, as before allocations were injected
    uint16_t enter_nat = pool.entry(kNameAndType, enter_utf8, int_void);
    uint16_t exit_nat = pool.entry(kNameAndType, exit_utf8, int_void);
    refs.enter = pool.entry(kMethodref, class_entry, enter_nat);
    refs.exit = pool.entry(kMethodref, class_entry, exit_nat);
  }
  if (needs.news) refs.alloc = pool.entry(kMethodref, class_entry, pool.entry(kNameAndType, alloc_utf8, int_void));
  if (needs.arrays) {
    uint16_t nat = pool.entry(kNameAndType, array_utf8, int_int_void);
    refs.alloc_array = pool.entry(kMethodref, class_entry, nat);
  }
  if (needs.multi) {
    uint16_t nat = pool.entry(kNameAndType, pool.utf8(tracker.alloc_multi_name), pool.utf8("([II)V"));
    refs.alloc_multi = pool.entry(kMethodref, class_entry, nat);
  }
  if (needs.classes) {
    uint16_t nat = pool.entry(kNameAndType, pool.utf8(tracker.alloc_class_name), pool.utf8("(Ljava/lang/Class;I)V"));
    refs.alloc_class = pool.entry(kMethodref, class_entry, nat);
  }
  if (needs.clones) {
    uint16_t nat = pool.entry(kNameAndType, pool.utf8(tracker.alloc_clone_name), pool.utf8("(Ljava/lang/Object;I)V"));
    refs.alloc_clone = pool.entry(kMethodref, class_entry, nat);
  }
  if (needs.positions) {
    uint16_t nat = pool.entry(kNameAndType, pool.utf8(tracker.at_name), int_void);
    refs.at = pool.entry(kMethodref, class_entry, nat);
  }
  uint16_t object_int_void = 0;
  auto mark = [&](bool needed, const std::string& name, const char* descriptor, uint16_t* ref) {
    if (!needed) return;
    if (object_int_void == 0) object_int_void = pool.utf8("(Ljava/lang/Object;I)V");
    uint16_t type = descriptor == nullptr ? object_int_void : pool.utf8(descriptor);
    *ref = pool.entry(kMethodref, class_entry, pool.entry(kNameAndType, pool.utf8(name), type));
  };
  mark(needs.marked, tracker.marked_name, nullptr, &refs.marked);
  mark(needs.marked_multi, tracker.marked_multi_name, "(Ljava/lang/Object;II)V", &refs.marked_multi);
  mark(needs.marked_class, tracker.marked_class_name, nullptr, &refs.marked_class);
  mark(needs.marked_clone, tracker.marked_clone_name, nullptr, &refs.marked_clone);
  return refs;
}

// The class file's header and constant pool, with the appended entries: the Integers of the IDs
// first (the lower their index, the likelier a 2-byte ldc), then the tracker's (append_tracker).
inline void write_pool(Writer& w, const uint8_t* data, const ClassFile& cf, const std::vector<uint32_t>& distinct,
                const PoolAppender& tracker_entries) {
  w.bytes(data, 8);
  w.u2(tracker_entries.next());
  w.bytes(data + 10, cf.pool_end - 10);
  for (uint32_t id : distinct) {
    w.u1(kInteger);
    w.u4(id);
  }
  w.bytes(tracker_entries.bytes().data(), tracker_entries.bytes().size());
}

}  // namespace fasthprof::class_file
