#include "heap_dump/heap_dump_layout.h"

#include <unordered_set>

#include "base/ids.h"

namespace fasthprof {

void ClassLayoutTable::add(ClassDescription description) {
  uint64_t id = description.class_id;
  if (id == 0 || !by_id_.try_emplace(id, descriptions_.size()).second) return;
  descriptions_.push_back(std::move(description));
}

size_t ClassLayoutTable::index_of(uint64_t class_id) const {
  const size_t* found = by_id_.find(class_id);
  return found == nullptr ? kNone : *found;
}

uint32_t ClassLayoutTable::interface_field_count(size_t index) const {
  std::unordered_set<size_t> seen;
  std::vector<size_t> pending;
  for (size_t at = index; at != kNone; at = super_index_[at]) {
    for (uint64_t interface_id : descriptions_[at].interfaces) pending.push_back(index_of(interface_id));
  }
  uint32_t count = 0;
  while (!pending.empty()) {
    size_t at = pending.back();
    pending.pop_back();
    if (at == kNone || !seen.insert(at).second) continue;
    count += static_cast<uint32_t>(descriptions_[at].fields.size());
    for (uint64_t interface_id : descriptions_[at].interfaces) pending.push_back(index_of(interface_id));
  }
  return count;
}

void ClassLayoutTable::resolve() {
  size_t count = descriptions_.size();
  layouts_.assign(count, ClassLayout{});
  super_index_.assign(count, kNone);
  by_registry_index_.clear();
  for (size_t i = 0; i < count; ++i) {
    const ClassDescription& description = descriptions_[i];
    size_t super = description.super_id == 0 ? kNone : index_of(description.super_id);
    super_index_[i] = super == i ? kNone : super;
    uint64_t registry = registry_object_index(RegistryObjectKind::kClass, description.class_id);
    if (registry != 0 && registry < (uint64_t{1} << 26)) {
      if (by_registry_index_.size() <= registry) by_registry_index_.resize(registry + 1, 0);
      by_registry_index_[registry] = static_cast<uint32_t>(i + 1);
    }
  }
  std::vector<size_t> chain;  // this class first, java.lang.Object last
  for (size_t i = 0; i < count; ++i) {
    ClassLayout& layout = layouts_[i];
    const ClassDescription& description = descriptions_[i];
    layout.description = &description;
    chain.clear();
    for (size_t at = i; at != kNone && chain.size() <= count; at = super_index_[at]) chain.push_back(at);
    // Instance values: this class's own fields first, then each superclass's.
    std::vector<uint32_t> class_offset(chain.size(), 0);
    uint32_t offset = 0;
    for (size_t c = 0; c < chain.size(); ++c) {
      class_offset[c] = offset;
      for (const DeclaredField& field : descriptions_[chain[c]].fields) {
        if (!field.is_static) offset += static_cast<uint32_t>(basic_type_size(field.type));
      }
    }
    layout.instance_size = offset;
    if (description.is_interface || description.is_array) continue;
    layout.index_base = interface_field_count(i);
    // JVMTI indices: java.lang.Object's fields first, this class's last.
    for (size_t c = chain.size(); c-- > 0;) {
      uint32_t at = class_offset[c];
      for (const DeclaredField& field : descriptions_[chain[c]].fields) {
        FieldSlot slot;
        slot.type = field.type;
        slot.is_static = field.is_static;
        slot.name = &field.name;
        if (!field.is_static) {
          slot.offset = at;
          at += static_cast<uint32_t>(basic_type_size(field.type));
          if (field.type == BasicType::kObject) {
            layout.reference_slots.push_back(static_cast<uint32_t>(layout.slots.size()));
          }
        }
        layout.slots.push_back(slot);
      }
    }
    for (const DeclaredField& field : description.fields) {
      if (!field.is_static) layout.own_fields.push_back({field.name_id, field.type});
    }
  }
}

const ClassLayout* ClassLayoutTable::find(uint64_t class_id) const {
  uint64_t registry = registry_object_index(RegistryObjectKind::kClass, class_id);
  if (registry != 0) {
    if (registry < by_registry_index_.size() && by_registry_index_[registry] != 0) {
      return &layouts_[by_registry_index_[registry] - 1];
    }
    if (registry < (uint64_t{1} << 26)) return nullptr;
  }
  size_t at = index_of(class_id);
  return at == kNone || at >= layouts_.size() ? nullptr : &layouts_[at];
}

}  // namespace fasthprof
