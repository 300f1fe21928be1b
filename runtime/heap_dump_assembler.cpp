#include "heap_dump_assembler.h"

#include <algorithm>

namespace fasthprof {
namespace {

void store_big_endian(uint8_t* at, BasicType type, uint64_t bits) {
  size_t size = basic_type_size(type);
  for (size_t i = 0; i < size; ++i) at[i] = static_cast<uint8_t>(bits >> (8 * (size - 1 - i)));
}

uint64_t load_big_endian(const uint8_t* at, size_t size) {
  uint64_t bits = 0;
  for (size_t i = 0; i < size; ++i) bits = (bits << 8) | at[i];
  return bits;
}

}  // namespace

HeapDumpAssembler::HeapDumpAssembler(const ClassLayoutTable& classes, Targets targets,
                                     uint64_t object_class_id, uint64_t class_class_id,
                                     bool primfields)
    : classes_(classes),
      targets_(targets),
      object_class_id_(object_class_id),
      class_class_id_(class_class_id),
      primfields_(primfields) {}

void HeapDumpAssembler::root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t trace_serial) {
  ++counts_.roots;
  if (targets_.binary) targets_.binary->root_jni_global(object_id, reference_id);
  else targets_.text_roots->root_jni_global(object_id, reference_id, trace_serial);
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
  if (targets_.binary) targets_.binary->root_sticky_class(object_id);
  else targets_.text_roots->root_system_class(object_id, layout->description->name);
}

void HeapDumpAssembler::root_monitor(uint64_t object_id) {
  ++counts_.roots;
  if (targets_.binary) targets_.binary->root_monitor_used(object_id);
  else targets_.text_roots->root_monitor(object_id);
}

void HeapDumpAssembler::root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) {
  ++counts_.roots;
  if (targets_.binary) {
    targets_.binary->root_thread_object(object_id, thread_serial, trace_serial);
    return;
  }
  targets_.text_roots->root_thread(object_id, thread_serial, trace_serial);
  targets_.text_roots->root_thread_block(object_id, thread_serial);
}

void HeapDumpAssembler::root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  ++counts_.roots;
  if (targets_.binary) targets_.binary->root_java_frame(object_id, thread_serial, frame);
  else targets_.text_roots->root_java_frame(object_id, thread_serial, frame);
}

void HeapDumpAssembler::root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  ++counts_.roots;
  if (targets_.binary) targets_.binary->root_jni_local(object_id, thread_serial, frame);
  else targets_.text_roots->root_jni_local(object_id, thread_serial, frame);
}

void HeapDumpAssembler::root_unknown(uint64_t object_id) {
  ++counts_.roots;
  if (targets_.binary) targets_.binary->root_unknown(object_id);
  else targets_.text_roots->root_unknown(object_id);
}

void HeapDumpAssembler::write_classes() {
  classes_.for_each_superclass_first([this](const ClassLayout& layout) { write_class(layout); });
}

void HeapDumpAssembler::write_class(const ClassLayout& layout) {
  const ClassDescription& description = *layout.description;
  ++counts_.class_dumps;
  if (targets_.binary) {
    ClassDumpRecord record;
    record.class_id = description.class_id;
    record.trace_serial = description.trace_serial;
    record.super_id = description.super_id;
    record.loader_id = description.loader_id;
    record.signers_id = description.signers_id;
    record.protection_domain_id = description.protection_domain_id;
    record.constant_pool = description.constant_pool;
    record.instance_size = layout.instance_size;
    record.static_fields = description.static_values;
    record.instance_fields = layout.own_fields;
    targets_.binary->class_dump(record);
    return;
  }
  TextWriter& text = *targets_.text_objects;
  text.class_begin(description.class_id, description.name, description.trace_serial);
  text.class_super(description.super_id);
  text.class_loader(description.loader_id);
  text.class_signers(description.signers_id);
  text.class_domain(description.protection_domain_id);
  size_t value = 0;
  for (const DeclaredField& field : description.fields) {
    if (!field.is_static) continue;
    if (value < description.static_values.size() && field.type == BasicType::kObject) {
      text.class_static(field.name, description.static_values[value].value);
    }
    ++value;
  }
  for (const ConstantPoolEntry& entry : description.constant_pool) text.class_constant_pool(entry.index, entry.value);
}

void HeapDumpAssembler::begin_object(uint64_t object_id, uint64_t class_id, uint32_t trace_serial,
                                     int64_t length, uint64_t size) {
  end_object();
  current_id_ = object_id;
  current_trace_ = trace_serial;
  current_size_ = size;
  current_class_id_ = class_id;
  current_layout_ = classes_.find(class_id);
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
    last_element_ = -1;
    elements_.clear();
    if (length < 0) return;
    if (targets_.binary) {
      targets_.binary->begin_object_array(object_id, trace_serial, class_id,
                                          static_cast<uint64_t>(length));
    } else {
      targets_.text_objects->object_array(object_id, size, trace_serial,
                                          static_cast<uint64_t>(length), description.name, class_id);
    }
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
  if (targets_.binary) {
    if (!targets_.binary->object_array_element(static_cast<uint64_t>(index), value_id)) {
      ++counts_.dropped_elements;
    }
    return;
  }
  if (index <= last_element_ || index >= current_length_) {
    ++counts_.dropped_elements;
    return;
  }
  last_element_ = index;
  targets_.text_objects->array_element(static_cast<uint64_t>(index), value_id);
}

void HeapDumpAssembler::primitive_array(BasicType type, const void* elements, uint64_t count) {
  if (current_ != Current::kPrimitiveArray || primitive_written_) return;
  primitive_written_ = true;
  ++counts_.primitive_arrays;
  uint64_t data_bytes = count * basic_type_size(type);
  counts_.bytes += current_size_;
  if (targets_.binary) {
    targets_.binary->primitive_array_dump(current_id_, current_trace_, type, elements, count);
  } else {
    targets_.text_objects->primitive_array(current_id_, data_bytes, current_trace_, count,
                                           current_layout_->description->name);
  }
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
  if (targets_.binary) {
    targets_.binary->instance_dump(current_id_, current_trace_, current_class_id_, values_);
    return;
  }
  TextWriter& text = *targets_.text_objects;
  std::string_view name = current_layout_ ? std::string_view(current_layout_->description->name) : "";
  text.object(current_id_, current_size_, current_trace_, name, current_class_id_);
  if (current_layout_ == nullptr || values_.empty()) return;
  for (uint32_t at : current_layout_->reference_slots) {
    const FieldSlot& slot = current_layout_->slots[at];
    text.object_field(*slot.name, load_big_endian(values_.data() + slot.offset, kIdSize));
  }
}

void HeapDumpAssembler::write_object_array() {
  ++counts_.object_arrays;
  counts_.bytes += current_size_;
  if (current_length_ >= 0) {
    // Streamed: header and elements are out; the rest of the array is null.
    if (targets_.binary) targets_.binary->end_object_array();
    return;
  }
  if (targets_.binary) {
    targets_.binary->object_array_dump(current_id_, current_trace_, current_class_id_, elements_);
    return;
  }
  TextWriter& text = *targets_.text_objects;
  text.object_array(current_id_, current_size_, current_trace_, elements_.size(),
                    current_layout_->description->name, current_class_id_);
  for (size_t i = 0; i < elements_.size(); ++i) text.array_element(i, elements_[i]);
}

void HeapDumpAssembler::class_instance(uint64_t object_id, uint64_t size) {
  end_object();
  begin_object(object_id, class_class_id_, kFirstTraceSerial, -1, size);
  end_object();
}

}  // namespace fasthprof
