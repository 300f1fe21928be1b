// The object graph of one heap dump, for the questions a dump is taken to answer: what keeps this
// memory alive (dominators.h computes its dominator tree), and by which path from a GC root.
//
// Node 0 is a virtual super-root; nodes 1..N are the dump's objects ordered by ID: every INSTANCE
// DUMP, OBJECT ARRAY DUMP, PRIMITIVE ARRAY DUMP and CLASS DUMP (the class object). Its edges:
//   - super-root -> the object of every ROOT sub-record, of every kind (JNI global and local, Java
//     frame, native stack, sticky class, thread block, monitor used, thread object, unknown):
//     the root set of VisualVM's heap library, which counts them all;
//   - instance -> each non-null reference field of its class and superclasses, and -> its class
//     object; without `weak_references`, java.lang.ref.Reference.referent is left out (a weak,
//     soft, final or phantom referent does not keep its object alive);
//   - object array -> each non-null element, and -> its array class object;
//   - class object -> each non-null static reference field, and -> its class loader.
// A reference to an ID that no object of the dump has (a JDK dump drops some VM-internal objects)
// is counted as dangling and left out.
//
// The graph never copies the dump: each node keeps the offset of its sub-record in the mapping (8
// bytes; its ID is read there), the edges are one CSR array (4 bytes per node, 4 per reference)
// filled in one pass over the mapped dump, and names, sizes and fields are decoded from the mapping
// when asked. IDs are found in a bitmap over the span of the dump's addresses (id_index.h, about
// 1 byte per object), or when they are too spread for it, by binary search in a sorted copy (8
// bytes per object) within the buckets of a small directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "big_array.h"

#include "dominators.h"
#include "hprof_model.h"
#include "id_index.h"

namespace fasthprof {

enum class ObjectKind : uint8_t { kInstance, kObjectArray, kPrimitiveArray, kClass, kSuperRoot };

struct HeapGraphOptions {
  bool weak_references = false;  // follow java.lang.ref.Reference.referent
  // Shallow sizes of a 64-bit JVM with compressed references and class pointers (HotSpot's
  // default under 32 GiB of heap, and what VisualVM's heap library assumes of such a dump): a
  // 12-byte header, 4-byte references, arrays 16 bytes before their elements; rounded up to 8.
  // Otherwise the rule of `fasthprof summary` (hprof_model.h).
  bool compressed_references = false;
};

// One ROOT sub-record that names an object of the dump.
struct GraphRoot {
  uint32_t node = 0;
  uint8_t tag = 0;      // the ROOT tag (runtime/base/hprof_format.h HeapTag)
  uint64_t offset = 0;  // of the sub-record
};

class HeapGraph : public HeapDumpObserver {
 public:
  static constexpr uint32_t kSuperRoot = 0;
  static constexpr size_t kLastDump = SIZE_MAX;

  // Given as the observer of HprofModel::load, the graph frames the objects of dump `dump` (0 from
  // the first; kLastDump: the last one, each dump's objects dropped when the next begins) during
  // the model's pass, and build() of that dump does not frame them again.
  void collect(size_t dump) { wanted_ = dump; }
  void sub_record(const HprofBytes& bytes, size_t dump, uint8_t tag, uint64_t offset) override;

  // Builds the graph of model.dumps()[dump]. The model and the bytes it reads must outlive the
  // graph. False with *error set when the dump's records cannot be framed again, or when it holds
  // 2^32 - 2 objects or 2^32 references or more (32-bit indices). Allocates.
  bool build(const HprofModel& model, size_t dump, const HeapGraphOptions& options, std::string* error);

  uint32_t nodes() const { return static_cast<uint32_t>(offsets_.size() + 1); }
  CsrGraph csr() const { return CsrGraph{nodes(), start_.data(), targets_.data()}; }
  // References kept (edges to objects of the dump, the super-root's included) and left out.
  uint64_t references() const { return references_; }
  uint64_t dangling() const { return dangling_; }
  // Objects whose ID another object of the dump has too (one of them is kept).
  uint64_t duplicates() const { return duplicates_; }
  const std::vector<GraphRoot>& roots() const { return roots_; }
  // The node of an object ID, kNoNode when the dump has none.
  uint32_t find(uint64_t id) const;
  // Every object sub-record has its ID right after its tag.
  uint64_t id(uint32_t node) const { return node == kSuperRoot ? 0 : bytes_.id(offsets_[node - 1] + 1); }
  uint64_t offset(uint32_t node) const { return offsets_[node - 1]; }
  ObjectKind kind(uint32_t node) const;
  // Shallow bytes by the rule of `fasthprof summary` (hprof_model.h), or with compressed
  // references (HeapGraphOptions); 0 for class objects and the
  // super-root: as in VisualVM's retained sizes, a class object's own bytes are not counted, only
  // what its statics hold.
  uint64_t shallow_bytes(uint32_t node) const;
  // The class object ID of an instance or object array, the class's own ID for a class object, 0
  // for a primitive array (whose type is its element type) and the super-root.
  uint64_t class_id(uint32_t node) const;
  // The element type of a primitive array (0 for other kinds).
  uint8_t element_type(uint32_t node) const;
  // kind(), shallow_bytes() and the class (class_id(), or for a primitive array its element type)
  // of an object at once, from one read of its sub-record: for passes over every object.
  struct Facts {
    ObjectKind kind;
    uint64_t class_key;
    uint64_t shallow;
  };
  Facts facts(uint32_t node) const;
  // "java.util.HashMap", "byte[]", "class java.lang.System", "<roots>".
  std::string type_name(uint32_t node) const;
  // The Java name of the class whose class object has this ID.
  std::string class_name(uint64_t class_id) const { return model_->class_name_by_object_id(class_id); }
  // What from's reference to `to` is: "static Foo.cache", "java.util.HashMap.table" (the class that
  // declares the field), "[7]", "<class>", "<classLoader>", or for the super-root the root's kind
  // ("ROOT JAVA FRAME"). Decoded from the dump; "?" when from holds no reference to `to`.
  std::string reference_name(uint32_t from, uint32_t to) const;
  // Bytes the graph holds (its arrays and class layouts).
  size_t bytes() const;

 private:
  struct Object {
    uint64_t id;
    uint64_t offset;
  };
  // The reference fields of instances of one class, as offsets into their field values.
  // Made when an instance of the class is first met, from its superclass's (made first): a chain
  // of classes costs one visit per class, however long, and classes with no instance none.
  struct Layout {
    uint64_t offset = 0;  // of the CLASS DUMP
    uint64_t super_id = 0;
    std::vector<uint32_t> references;
    uint32_t value_bytes = 0;  // of an instance's field values, superclasses included
    uint32_t reference_fields = 0;  // the referent included
    uint8_t state = 0;  // 0 not made, 1 being made (a chain that loops back stops there), 2 made
  };

  void start_collecting(const HprofBytes& bytes);
  void take(uint8_t tag, uint64_t at);
  bool frame_dump(const HprofModel& model, size_t dump, std::string* error);
  static void sort_objects(BigVector<Object>* objects);
  void index_objects();
  void index_sorted();
  void find_reference_class(const HprofModel& model);
  const Layout* layout(uint64_t class_id);
  void make_layout(Layout* layout, const Layout* super);
  bool fill_edges(std::string* error);
  uint32_t append(uint64_t id);
  uint64_t compressed_bytes(uint64_t offset) const;
  std::string field_name(uint64_t class_id, uint64_t value_offset) const;

  const HprofModel* model_ = nullptr;
  HprofBytes bytes_;
  // By ID: node v's sub-record is at offsets_[v - 1] (in the dump's order while framing).
  BigVector<uint64_t> offsets_;
  IdIndex index_;
  // Without index_: the IDs sorted, and the directory over them: ids_[directory_[b] ..
  // directory_[b + 1]) have (id - min_id_) >> shift_ == b.
  BigVector<uint64_t> ids_;
  BigVector<uint32_t> directory_;
  uint64_t min_id_ = 0;
  uint64_t max_id_ = 0;
  uint64_t varying_ = 0;  // the OR of each ID XOR the first: its trailing zeros are the alignment
  uint64_t first_id_ = 0;
  uint64_t last_id_ = 0;
  bool ascending_ = true;  // the dump's order is the IDs'
  size_t wanted_ = SIZE_MAX - 1;   // the dump sub_record() collects (SIZE_MAX - 1: none)
  size_t collected_ = SIZE_MAX - 1;  // the dump whose objects offsets_ holds, framed by sub_record()
  unsigned shift_ = 0;
  BigVector<uint32_t> start_;
  BigVector<uint32_t> targets_;
  std::vector<GraphRoot> roots_;
  std::vector<uint64_t> root_ids_;  // while building: the object ID of each root
  std::unordered_map<uint64_t, Layout> layouts_;  // by class object ID
  bool compressed_ = false;
  bool weak_ = false;
  uint64_t reference_class_ = 0;  // java.lang.ref.Reference's class object
  uint64_t edge_bound_ = 0;
  uint64_t references_ = 0;
  uint64_t dangling_ = 0;
  uint64_t duplicates_ = 0;
};

}  // namespace fasthprof
