#include "registries/class_registry.h"

#include "base/java_names.h"

namespace fasthprof {

uint64_t ClassRegistry::KeyHash::operator()(const Key& key) const {
  return XXH3_64bits_withSeed(key.signature.data(), key.signature.size(), key.loader_key);
}

ClassRef ClassRegistry::register_class(std::string_view signature, uint64_t loader_key) {
  if (const uint32_t* known = loaded_.find(Key{signature, loader_key})) {
    const ClassInfo& info = classes_[*known];
    return ClassRef{info.serial, info.object_id, false};
  }
  uint32_t index = static_cast<uint32_t>(classes_.size());
  ClassInfo info;
  info.serial = kFirstClassSerial + index;
  info.object_id = make_registry_object_id(RegistryObjectKind::kClass, uint64_t{index} + 1);
  info.signature = std::string(signature);
  info.name = java_name(signature);
  info.loader_key = loader_key;
  info.loaded = true;
  classes_.push_back(std::move(info));
  const ClassInfo& added = classes_.back();
  loaded_.try_emplace(Key{added.signature, loader_key}, index);
  ++loaded_count_;
  return ClassRef{added.serial, added.object_id, true};
}

const ClassInfo* ClassRegistry::find(std::string_view signature, uint64_t loader_key) const {
  const uint32_t* known = loaded_.find(Key{signature, loader_key});
  return known == nullptr ? nullptr : &classes_[*known];
}

const ClassInfo* ClassRegistry::find_by_serial(uint32_t serial) const {
  if (serial < kFirstClassSerial || serial - kFirstClassSerial >= classes_.size()) return nullptr;
  return &classes_[serial - kFirstClassSerial];
}

const ClassInfo* ClassRegistry::find_by_object_id(uint64_t object_id) const {
  uint64_t index = registry_object_index(RegistryObjectKind::kClass, object_id);
  if (index == 0 || index > classes_.size()) return nullptr;
  return &classes_[index - 1];
}

bool ClassRegistry::unload(uint32_t serial) {
  if (serial < kFirstClassSerial || serial - kFirstClassSerial >= classes_.size()) return false;
  ClassInfo& info = classes_[serial - kFirstClassSerial];
  if (!info.loaded) return false;
  info.loaded = false;
  loaded_.erase(Key{info.signature, info.loader_key});
  --loaded_count_;
  return true;
}

void ClassRegistry::serials_by_signature(std::unordered_map<std::string, uint32_t>* out) const {
  out->clear();
  for_each_loaded([&](const ClassInfo& info) {
    auto [it, inserted] = out->try_emplace(info.signature, info.serial);
    if (!inserted && info.loader_key == 0) it->second = info.serial;
  });
}

}  // namespace fasthprof
