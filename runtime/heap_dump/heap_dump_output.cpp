#include "heap_dump/heap_dump_output.h"

#include "base/byte_decoder.h"

namespace fasthprof {
namespace {


}  // namespace

void BinaryHeapDumpOutput::root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t) {
  segments_.root_jni_global(object_id, reference_id);
}

void BinaryHeapDumpOutput::root_system_class(uint64_t object_id, std::string_view) {
  segments_.root_sticky_class(object_id);
}

void BinaryHeapDumpOutput::root_monitor(uint64_t object_id) { segments_.root_monitor_used(object_id); }

void BinaryHeapDumpOutput::root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) {
  segments_.root_thread_object(object_id, thread_serial, trace_serial);
}

void BinaryHeapDumpOutput::root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  segments_.root_java_frame(object_id, thread_serial, frame);
}

void BinaryHeapDumpOutput::root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  segments_.root_jni_local(object_id, thread_serial, frame);
}

void BinaryHeapDumpOutput::root_unknown(uint64_t object_id) { segments_.root_unknown(object_id); }

void BinaryHeapDumpOutput::class_dump(const ClassLayout& layout) {
  const ClassDescription& description = *layout.description;
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
  segments_.class_dump(record);
}

void BinaryHeapDumpOutput::instance(uint64_t object_id, uint64_t, uint32_t trace_serial, uint64_t class_id,
                                    const ClassLayout*, std::span<const uint8_t> values) {
  segments_.instance_dump(object_id, trace_serial, class_id, values);
}

void BinaryHeapDumpOutput::begin_object_array(uint64_t array_id, uint64_t, uint32_t trace_serial,
                                              uint64_t class_id, std::string_view, uint64_t length) {
  segments_.begin_object_array(array_id, trace_serial, class_id, length);
}

bool BinaryHeapDumpOutput::object_array_element(uint64_t index, uint64_t value_id) {
  return segments_.object_array_element(index, value_id);
}

void BinaryHeapDumpOutput::end_object_array() { segments_.end_object_array(); }

void BinaryHeapDumpOutput::object_array(uint64_t array_id, uint64_t, uint32_t trace_serial, uint64_t class_id,
                                        std::string_view, std::span<const uint64_t> elements) {
  segments_.object_array_dump(array_id, trace_serial, class_id, elements);
}

void BinaryHeapDumpOutput::primitive_array(uint64_t array_id, uint32_t trace_serial, BasicType type,
                                           std::string_view, const void* elements, uint64_t count) {
  segments_.primitive_array_dump(array_id, trace_serial, type, elements, count);
}

void TextHeapDumpOutput::root_jni_global(uint64_t object_id, uint64_t reference_id, uint32_t trace_serial) {
  roots_.root_jni_global(object_id, reference_id, trace_serial);
}

void TextHeapDumpOutput::root_system_class(uint64_t object_id, std::string_view class_name) {
  roots_.root_system_class(object_id, class_name);
}

void TextHeapDumpOutput::root_monitor(uint64_t object_id) { roots_.root_monitor(object_id); }

void TextHeapDumpOutput::root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) {
  roots_.root_thread(object_id, thread_serial, trace_serial);
  roots_.root_thread_block(object_id, thread_serial);
}

void TextHeapDumpOutput::root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  roots_.root_java_frame(object_id, thread_serial, frame);
}

void TextHeapDumpOutput::root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  roots_.root_jni_local(object_id, thread_serial, frame);
}

void TextHeapDumpOutput::root_unknown(uint64_t object_id) { roots_.root_unknown(object_id); }

void TextHeapDumpOutput::class_dump(const ClassLayout& layout) {
  const ClassDescription& description = *layout.description;
  objects_.class_begin(description.class_id, description.name, description.trace_serial);
  objects_.class_super(description.super_id);
  objects_.class_loader(description.loader_id);
  objects_.class_signers(description.signers_id);
  objects_.class_domain(description.protection_domain_id);
  size_t value = 0;
  for (const DeclaredField& field : description.fields) {
    if (!field.is_static) continue;
    if (value < description.static_values.size() && field.type == BasicType::kObject) {
      objects_.class_static(field.name, description.static_values[value].value);
    }
    ++value;
  }
  for (const ConstantPoolEntry& entry : description.constant_pool) {
    objects_.class_constant_pool(entry.index, entry.value);
  }
}

void TextHeapDumpOutput::instance(uint64_t object_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                                  const ClassLayout* layout, std::span<const uint8_t> values) {
  std::string_view name = layout ? std::string_view(layout->description->name) : "";
  objects_.object(object_id, size, trace_serial, name, class_id);
  if (layout == nullptr || values.empty()) return;
  for (uint32_t at : layout->reference_slots) {
    const FieldSlot& slot = layout->slots[at];
    objects_.object_field(*slot.name, load_be(values.data() + slot.offset, kIdSize));
  }
}

void TextHeapDumpOutput::begin_object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial,
                                            uint64_t class_id, std::string_view class_name, uint64_t length) {
  array_length_ = length;
  last_element_ = -1;
  objects_.object_array(array_id, size, trace_serial, length, class_name, class_id);
}

bool TextHeapDumpOutput::object_array_element(uint64_t index, uint64_t value_id) {
  if (static_cast<int64_t>(index) <= last_element_ || index >= array_length_) return false;
  last_element_ = static_cast<int64_t>(index);
  objects_.array_element(index, value_id);
  return true;
}

void TextHeapDumpOutput::object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t class_id,
                                      std::string_view class_name, std::span<const uint64_t> elements) {
  objects_.object_array(array_id, size, trace_serial, elements.size(), class_name, class_id);
  for (size_t i = 0; i < elements.size(); ++i) objects_.array_element(i, elements[i]);
}

void TextHeapDumpOutput::primitive_array(uint64_t array_id, uint32_t trace_serial, BasicType type,
                                         std::string_view class_name, const void*, uint64_t count) {
  // The size column of a primitive array's ARR line counts its elements' bytes.
  objects_.primitive_array(array_id, count * basic_type_size(type), trace_serial, count, class_name);
}

}  // namespace fasthprof
