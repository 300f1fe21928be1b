#include "heap_dump/heap_dump_assembler.h"

#include <algorithm>
#include <cstring>

#include "base/byte_encoder.h"

namespace fasthprof {
namespace {

// One store per field (the VM thread runs this for every field of every instance).
void store_big_endian(uint8_t* at, BasicType type, uint64_t bits) {
  switch (basic_type_size(type)) {
    case 1: *at = static_cast<uint8_t>(bits); break;
    case 2: store_be16(at, static_cast<uint16_t>(bits)); break;
    case 4: store_be32(at, static_cast<uint32_t>(bits)); break;
    case 8: store_be64(at, bits); break;
    default: break;  // an unknown type code takes no room
  }
}

}  // namespace

HeapDumpAssembler::HeapDumpAssembler(const ClassLayoutTable& classes, HeapDumpOutput& out,
                                     uint64_t object_class_id, uint64_t class_class_id,
                                     bool primfields)
    : classes_(classes),
      out_(out),
      object_class_id_(object_class_id),
      class_class_id_(class_class_id),
      primfields_(primfields) {}

void HeapDumpAssembler::root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t trace_serial) {
  ++counts_.roots;
  out_.root_jni_global(object_id, reference_id, trace_serial);
}

void HeapDumpAssembler::root_system_class(uint64_t object_id) {
  // HotSpot reports what the boot loader's class data holds as "system class" roots: the class
  // mirrors, but also constant-pool reference arrays, modules and method types. Only a class is a
  // sticky class; the rest are roots of no kind the format names.
  const ClassLayout* layout = classes_.find(object_id);
  if (layout == nullptr) {
    root_unknown(object_id);
    return;
  }
  ++counts_.roots;
  out_.root_system_class(object_id, layout->description->name);
}

void HeapDumpAssembler::root_monitor(uint64_t object_id) {
  ++counts_.roots;
  out_.root_monitor(object_id);
}

void HeapDumpAssembler::root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) {
  ++counts_.roots;
  out_.root_thread(object_id, thread_serial, trace_serial);
}

void HeapDumpAssembler::root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  ++counts_.roots;
  out_.root_java_frame(object_id, thread_serial, frame);
}

void HeapDumpAssembler::root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  ++counts_.roots;
  out_.root_jni_local(object_id, thread_serial, frame);
}

void HeapDumpAssembler::root_unknown(uint64_t object_id) {
  ++counts_.roots;
  out_.root_unknown(object_id);
}

void HeapDumpAssembler::write_classes() {
  classes_.for_each_superclass_first([this](const ClassLayout& layout) { write_class(layout); });
}

void HeapDumpAssembler::write_class(const ClassLayout& layout) {
  ++counts_.class_dumps;
  out_.class_dump(layout);
}

void HeapDumpAssembler::begin_object(uint64_t object_id, uint64_t class_id, const ClassLayout* layout,
                                     uint32_t trace_serial, int64_t length, uint64_t size) {
  end_object();
  current_id_ = object_id;
  current_trace_ = trace_serial;
  current_size_ = size;
  current_class_id_ = class_id;
  current_layout_ = layout;
  primitive_written_ = false;
  if (current_layout_ == nullptr) {
    // A class loaded after the layouts were taken: its instances become plain objects.
    ++counts_.unknown_classes;
    current_class_id_ = object_class_id_;
    current_layout_ = classes_.find(object_class_id_);
    current_ = Current::kInstance;
    values_.clear();
    return;
  }
  const ClassDescription& description = *current_layout_->description;
  if (description.is_array && description.element_type != BasicType::kObject) {
    current_ = Current::kPrimitiveArray;
    return;
  }
  if (description.is_array) {
    current_ = Current::kObjectArray;
    current_length_ = length;
    elements_.clear();
    if (length < 0) return;
    out_.begin_object_array(object_id, size, trace_serial, class_id, description.name,
                            static_cast<uint64_t>(length));
    return;
  }
  current_ = Current::kInstance;
  values_.assign(current_layout_->instance_size, 0);
}

void HeapDumpAssembler::field(int32_t index, uint64_t value) {
  if (current_ != Current::kInstance || values_.empty()) return;
  const FieldSlot* slot = current_layout_->slot(index);
  if (slot == nullptr || slot->offset + basic_type_size(slot->type) > values_.size()) return;
  store_big_endian(values_.data() + slot->offset, slot->type, value);
}

void HeapDumpAssembler::primitive_field(int32_t index, uint64_t bits) {
  if (primfields_) field(index, bits);
}

void HeapDumpAssembler::element(int32_t index, uint64_t value_id) {
  if (current_ != Current::kObjectArray || index < 0) return;
  if (current_length_ < 0) {
    size_t at = static_cast<size_t>(index);
    if (at >= elements_.size()) elements_.resize(at + 1, 0);
    elements_[at] = value_id;
    return;
  }
  if (!out_.object_array_element(static_cast<uint64_t>(index), value_id)) ++counts_.dropped_elements;
}

void HeapDumpAssembler::primitive_array(BasicType type, const void* elements, uint64_t count) {
  if (current_ != Current::kPrimitiveArray || primitive_written_) return;
  primitive_written_ = true;
  ++counts_.primitive_arrays;
  counts_.bytes += current_size_;
  out_.primitive_array(current_id_, current_trace_, type, current_layout_->description->name, elements, count);
}

void HeapDumpAssembler::skip_object() {
  end_object();
  current_ = Current::kSkip;
}

void HeapDumpAssembler::end_object() {
  switch (current_) {
    case Current::kNone:
    case Current::kSkip:
      break;
    case Current::kInstance:
      write_instance();
      break;
    case Current::kObjectArray:
      write_object_array();
      break;
    case Current::kPrimitiveArray:
      if (!primitive_written_) {
        // primarrays=n: the array without its contents.
        BasicType type = current_layout_->description->element_type;
        primitive_array(type, nullptr, 0);
      }
      break;
  }
  current_ = Current::kNone;
}

void HeapDumpAssembler::write_instance() {
  ++counts_.instances;
  counts_.bytes += current_size_;
  out_.instance(current_id_, current_size_, current_trace_, current_class_id_, current_layout_, values_);
}

void HeapDumpAssembler::write_object_array() {
  ++counts_.object_arrays;
  counts_.bytes += current_size_;
  if (current_length_ >= 0) {
    // Streamed: header and elements are out; the rest of the array is null.
    out_.end_object_array();
    return;
  }
  out_.object_array(current_id_, current_size_, current_trace_, current_class_id_,
                    current_layout_->description->name, elements_);
}

void HeapDumpAssembler::class_instance(uint64_t object_id, uint64_t size) {
  end_object();
  begin_object(object_id, class_class_id_, kFirstTraceSerial, -1, size);
  end_object();
}

}  // namespace fasthprof
