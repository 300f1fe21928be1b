// Turns the events of a heap walk into heap-dump records, written through a HeapDumpOutput
// (heap_dump_output.h: binary sub-records or text lines; the assembler does not know which).
//
// The walk reports an object's contents after the object itself, one object at a time: an
// instance's or array's outgoing references and values come together, opened by begin_object().
// The assembler collects them and writes the record when the next object begins or on
// end_object(). Values never reported stay 0; an object array's elements never reported are null.
//
// Object arrays are not collected: the walk carries an array's length from the reference to it,
// and FollowReferences reports the non-null elements in ascending index order (HotSpot 17 and
// 25, iterate_over_array), so the record's header goes out at begin_object() and each element
// as it comes, the gaps as nulls (the ARR line and its element lines likewise). An element out of
// that order, or past the length, is refused by the output, dropped and counted (dropped_elements). Only an array whose
// length the walk did not carry (-1; HotSpot always passes it) is collected whole and written at
// its end with the length highest non-null index + 1.
//
// Threads: one thread at a time (the VM thread during the walk, then the dump's thread). The hot
// path allocates only when an object is larger than every one before it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/memory.h"
#include "heap_dump/heap_dump_layout.h"
#include "heap_dump/heap_dump_output.h"

namespace fasthprof {

struct HeapDumpCounts {
  uint64_t instances = 0;
  uint64_t object_arrays = 0;
  uint64_t primitive_arrays = 0;
  uint64_t class_dumps = 0;
  uint64_t roots = 0;
  uint64_t bytes = 0;            // object sizes as the JVM reported them (text mode; 0 if unknown)
  uint64_t unknown_classes = 0;  // objects whose class was loaded after the layouts were taken
  uint64_t dropped_elements = 0;  // object-array elements out of index order or past the length
  uint64_t objects() const { return instances + object_arrays + primitive_arrays; }
};

class HeapDumpAssembler {
 public:
  // out must outlive the assembler. object_class_id and class_class_id name java.lang.Object and java.lang.Class: an object of
  // an unknown class is written as a java.lang.Object, a class object without CLASS DUMP (int.class)
  // as an instance of java.lang.Class. primfields=false zeroes primitive instance fields.
  HeapDumpAssembler(const ClassLayoutTable& classes, HeapDumpOutput& out, uint64_t object_class_id,
                    uint64_t class_class_id, bool primfields);

  // Roots.
  void root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t trace_serial);
  void root_system_class(uint64_t object_id);
  void root_monitor(uint64_t object_id);
  void root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial);
  void root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame);
  void root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame);
  void root_unknown(uint64_t object_id);

  // Every class's dump, superclasses first.
  void write_classes();

  // Starts an instance or array of class_id (ending the object before it). length: the array's
  // length when known (-1 otherwise); size: the object's size in bytes when known (0 otherwise).
  void begin_object(uint64_t object_id, uint64_t class_id, uint32_t trace_serial, int64_t length,
                    uint64_t size) {
    begin_object(object_id, class_id, classes_.find(class_id), trace_serial, length, size);
  }
  // The same with the class's layout looked up by the caller (classes.find(class_id)), which the
  // walk has at hand: one lookup per object instead of two.
  void begin_object(uint64_t object_id, uint64_t class_id, const ClassLayout* layout, uint32_t trace_serial,
                    int64_t length, uint64_t size);
  // A reference or primitive value of the current instance (JVMTI field index; value: an ID, or
  // the primitive's bits).
  void field(int32_t index, uint64_t value);
  void primitive_field(int32_t index, uint64_t bits);
  // A non-null element of the current object array.
  void element(int32_t index, uint64_t value_id);
  // The contents of the current primitive array (host byte order); written at once.
  void primitive_array(BasicType type, const void* elements, uint64_t count);
  // Skips everything until the next begin_object() (an object the dump must not contain).
  void skip_object();
  // Writes the current object, if any.
  void end_object();

  // A java.lang.Class object without a CLASS DUMP (int.class, or a class loaded after the
  // layouts were taken): an INSTANCE of java.lang.Class whose values are 0.
  void class_instance(uint64_t object_id, uint64_t size);

  const HeapDumpCounts& counts() const { return counts_; }
  uint64_t current_object() const { return current_id_; }

 private:
  enum class Current : uint8_t { kNone, kSkip, kInstance, kObjectArray, kPrimitiveArray };

  void write_instance();
  void write_object_array();
  void write_class(const ClassLayout& layout);

  const ClassLayoutTable& classes_;
  HeapDumpOutput& out_;
  uint64_t object_class_id_;
  uint64_t class_class_id_;
  bool primfields_;

  Current current_ = Current::kNone;
  uint64_t current_id_ = 0;
  uint64_t current_class_id_ = 0;
  uint32_t current_trace_ = 0;
  uint64_t current_size_ = 0;
  const ClassLayout* current_layout_ = nullptr;
  bool primitive_written_ = false;
  int64_t current_length_ = -1;   // the object array's length; -1: unknown, elements_ collects
  std::vector<uint8_t, memory::Allocator<uint8_t>> values_;
  std::vector<uint64_t, memory::Allocator<uint64_t>> elements_;
  HeapDumpCounts counts_;
};

}  // namespace fasthprof
