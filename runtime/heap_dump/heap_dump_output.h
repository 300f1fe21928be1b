// What a heap dump writes, once per kind of record, in the terms the assembler has (IDs, serials,
// class layouts, encoded instance values): binary sub-records through a HeapDumpWriter, or the text
// dump's lines through TextWriters. The format is chosen once, when the output is made; the
// assembler (heap_dump_assembler.h) decides what to write and in which order and never asks which
// format it writes.
//
// Threads: one thread at a time (the VM thread during the walk, then the dump's thread).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "heap_dump/heap_dump_layout.h"
#include "heap_dump/heap_dump_writer.h"
#include "records/text_writer.h"

namespace fasthprof {

class HeapDumpOutput {
 public:
  virtual ~HeapDumpOutput() = default;

  virtual void root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t trace_serial) = 0;
  // A class the boot loader holds (binary: ROOT STICKY CLASS).
  virtual void root_system_class(uint64_t object_id, std::string_view class_name) = 0;
  virtual void root_monitor(uint64_t object_id) = 0;
  // A live thread's object (text: its <thread> and <thread block> lines).
  virtual void root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) = 0;
  virtual void root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) = 0;
  virtual void root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) = 0;
  virtual void root_unknown(uint64_t object_id) = 0;

  // CLASS DUMP, or the CLS block with its non-null links, reference statics and constants.
  virtual void class_dump(const ClassLayout& layout) = 0;

  // An instance: values are its INSTANCE DUMP values (big-endian, own class first), empty when the
  // class is unknown; layout is null for an unknown class (text prints no name and no fields).
  // size: the JVM's size of the object (text), 0 when unknown.
  virtual void instance(uint64_t object_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                        const ClassLayout* layout, std::span<const uint8_t> values) = 0;

  // An object array streamed element by element: its header, then its non-null elements in
  // ascending index order (an element out of order or past the length is refused: returns false),
  // then end_object_array() (the rest of the array is null).
  virtual void begin_object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial,
                                  uint64_t class_id, std::string_view class_name, uint64_t length) = 0;
  virtual bool object_array_element(uint64_t index, uint64_t value_id) = 0;
  virtual void end_object_array() = 0;

  // An object array whose elements were collected (0 for null).
  virtual void object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                            std::string_view class_name, std::span<const uint64_t> elements) = 0;

  // A primitive array; elements in host byte order, null with count 0 for an array written
  // without its contents (primarrays=n).
  virtual void primitive_array(uint64_t array_id, uint32_t trace_serial, BasicType type,
                               std::string_view class_name, const void* elements, uint64_t count) = 0;
};

// Binary: sub-records of HEAP DUMP SEGMENTs. segments must outlive this output.
class BinaryHeapDumpOutput final : public HeapDumpOutput {
 public:
  explicit BinaryHeapDumpOutput(HeapDumpWriter& segments) : segments_(segments) {}

  void root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t trace_serial) override;
  void root_system_class(uint64_t object_id, std::string_view class_name) override;
  void root_monitor(uint64_t object_id) override;
  void root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) override;
  void root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) override;
  void root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) override;
  void root_unknown(uint64_t object_id) override;
  void class_dump(const ClassLayout& layout) override;
  void instance(uint64_t object_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                const ClassLayout* layout, std::span<const uint8_t> values) override;
  void begin_object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                          std::string_view class_name, uint64_t length) override;
  bool object_array_element(uint64_t index, uint64_t value_id) override;
  void end_object_array() override;
  void object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                    std::string_view class_name, std::span<const uint64_t> elements) override;
  void primitive_array(uint64_t array_id, uint32_t trace_serial, BasicType type, std::string_view class_name,
                       const void* elements, uint64_t count) override;

 private:
  HeapDumpWriter& segments_;
};

// Text: ROOT lines to one writer, CLS, OBJ and ARR lines to another, so that the dump can list the
// roots first whatever order the walk reports them in. Both must outlive this output.
class TextHeapDumpOutput final : public HeapDumpOutput {
 public:
  TextHeapDumpOutput(TextWriter& roots, TextWriter& objects) : roots_(roots), objects_(objects) {}

  void root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t trace_serial) override;
  void root_system_class(uint64_t object_id, std::string_view class_name) override;
  void root_monitor(uint64_t object_id) override;
  void root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) override;
  void root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) override;
  void root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) override;
  void root_unknown(uint64_t object_id) override;
  void class_dump(const ClassLayout& layout) override;
  void instance(uint64_t object_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                const ClassLayout* layout, std::span<const uint8_t> values) override;
  void begin_object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                          std::string_view class_name, uint64_t length) override;
  bool object_array_element(uint64_t index, uint64_t value_id) override;
  void end_object_array() override {}
  void object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                    std::string_view class_name, std::span<const uint64_t> elements) override;
  void primitive_array(uint64_t array_id, uint32_t trace_serial, BasicType type, std::string_view class_name,
                       const void* elements, uint64_t count) override;

 private:
  TextWriter& roots_;
  TextWriter& objects_;
  uint64_t array_length_ = 0;  // of the streamed object array
  int64_t last_element_ = -1;  // its last element written so far
};

}  // namespace fasthprof
