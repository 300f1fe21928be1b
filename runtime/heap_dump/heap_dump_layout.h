// Class layouts for a heap dump, resolved before the walk: what each CLASS DUMP says, and how a
// JVMTI field index of an instance maps to a place in its INSTANCE DUMP values.
//
// JVMTI numbers the fields of class C (jvmtiHeapReferenceInfoField) as: first the fields of every
// interface C implements (directly, through its superclasses or through other interfaces; each
// interface once), then the fields of java.lang.Object, of each superclass down the chain, and of C,
// each class's in GetClassFields order, statics included. An INSTANCE DUMP lists the instance
// fields of C first, then those of its superclass, and so on up to java.lang.Object.
//
// Threads: built on one thread before the walk; read-only afterwards (the walk's callbacks read
// it on the VM thread while the builder's thread waits).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "base/flat_map.h"
#include "base/hprof_format.h"
#include "base/memory.h"
#include "heap_dump/heap_dump_writer.h"

namespace fasthprof {

// One field as GetClassFields lists it.
struct DeclaredField {
  std::string name;
  BasicType type = BasicType::kObject;
  bool is_static = false;
  uint64_t name_id = 0;  // UTF8 ID (binary output), 0 in text output
};

// Everything the agent learns about one class before the walk.
struct ClassDescription {
  uint64_t class_id = 0;
  uint64_t super_id = 0;   // 0 for java.lang.Object, interfaces and primitive types
  uint64_t loader_id = 0;  // 0 for the boot loader
  uint64_t signers_id = 0;            // the signers array, 0 when none
  uint64_t protection_domain_id = 0;  // 0 when none
  uint32_t trace_serial = kFirstTraceSerial;
  std::string name;        // Java form: "java.lang.String", "int[]"
  bool is_interface = false;
  bool is_array = false;
  BasicType element_type = BasicType::kObject;  // arrays: the element type
  std::vector<uint64_t> interfaces;             // directly implemented (IDs)
  std::vector<DeclaredField> fields;            // GetClassFields order, statics included
  std::vector<StaticFieldValue> static_values;  // values of the static fields, in field order
  // Resolved String and class constants (object IDs), highest pool index first as the original.
  std::vector<ConstantPoolEntry> constant_pool;
};

// Where a JVMTI field index lands in an INSTANCE DUMP.
struct FieldSlot {
  BasicType type = BasicType::kObject;
  bool is_static = true;  // statics (and unknown indices) are ignored in instances
  uint32_t offset = 0;    // byte offset in the INSTANCE DUMP values
  const std::string* name = nullptr;  // for text lines
};

struct ClassLayout {
  const ClassDescription* description = nullptr;
  uint32_t instance_size = 0;   // bytes of INSTANCE DUMP values, inherited fields included
  uint32_t index_base = 0;      // JVMTI index of the first field of the superclass chain
  std::vector<FieldSlot> slots; // by JVMTI index - index_base
  std::vector<InstanceFieldDecl> own_fields;
  // Reference fields over the whole chain in JVMTI order (Object's first), for text lines.
  std::vector<uint32_t> reference_slots;

  // The slot of a JVMTI field index, or nullptr when the index is not an instance field.
  const FieldSlot* slot(int32_t index) const {
    int64_t at = static_cast<int64_t>(index) - index_base;
    if (at < 0 || at >= static_cast<int64_t>(slots.size())) return nullptr;
    const FieldSlot& found = slots[static_cast<size_t>(at)];
    return found.is_static ? nullptr : &found;
  }
};

// The classes of one dump. Lookups by class ID are a vector index for the agent's class IDs
// (ids.h registry space) and a hash lookup otherwise.
class ClassLayoutTable {
 public:
  ClassLayoutTable() = default;
  ClassLayoutTable(const ClassLayoutTable&) = delete;
  ClassLayoutTable& operator=(const ClassLayoutTable&) = delete;

  // Adds a class; later add() calls with the same ID are ignored. Allocates.
  void add(ClassDescription description);

  // Computes every layout from the descriptions added (superclasses and interfaces found by ID;
  // a missing superclass ends the chain). Call once, after the last add(). Allocates.
  void resolve();

  // nullptr when the class is unknown. Never allocates; any thread once resolve() returned.
  const ClassLayout* find(uint64_t class_id) const;

  size_t size() const { return descriptions_.size(); }

  // Calls fn(const ClassLayout&) for every class, each superclass before its subclasses.
  template <typename Fn>
  void for_each_superclass_first(Fn&& fn) const {
    std::vector<uint8_t> done(layouts_.size(), 0);
    std::vector<size_t> chain;
    for (size_t i = 0; i < layouts_.size(); ++i) {
      chain.clear();
      for (size_t at = i; at != kNone && !done[at]; at = super_index_[at]) chain.push_back(at);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        done[*it] = 1;
        fn(layouts_[*it]);
      }
    }
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  size_t index_of(uint64_t class_id) const;
  uint32_t interface_field_count(size_t index) const;

  std::deque<ClassDescription> descriptions_;
  std::vector<ClassLayout, memory::Allocator<ClassLayout>> layouts_;
  std::vector<size_t, memory::Allocator<size_t>> super_index_;
  FlatMap<uint64_t, size_t> by_id_;  // class object ID -> index
  std::vector<uint32_t, memory::Allocator<uint32_t>> by_registry_index_;  // registry index -> index + 1 (0: none)
};

}  // namespace fasthprof
