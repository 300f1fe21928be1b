#include "thread_registry.h"

namespace fasthprof {

ThreadRef ThreadRegistry::start_thread(uint64_t key) {
  auto it = alive_.find(key);
  if (it != alive_.end()) {
    const ThreadInfo& info = threads_[it->second];
    return ThreadRef{info.serial, info.object_id, false};
  }
  uint32_t index = static_cast<uint32_t>(threads_.size());
  ThreadInfo info;
  info.serial = kUnknownThreadSerial + 1 + index;
  info.object_id = make_registry_object_id(RegistryObjectKind::kThread, uint64_t{index} + 1);
  info.key = key;
  info.alive = true;
  threads_.push_back(info);
  alive_.emplace(key, index);
  return ThreadRef{info.serial, info.object_id, true};
}

bool ThreadRegistry::end_thread(uint32_t serial) {
  if (serial <= kUnknownThreadSerial || serial - kUnknownThreadSerial > threads_.size()) return false;
  ThreadInfo& info = threads_[serial - kUnknownThreadSerial - 1];
  if (!info.alive) return false;
  info.alive = false;
  alive_.erase(info.key);
  return true;
}

const ThreadInfo* ThreadRegistry::find(uint64_t key) const {
  auto it = alive_.find(key);
  return it == alive_.end() ? nullptr : &threads_[it->second];
}

const ThreadInfo* ThreadRegistry::find_by_serial(uint32_t serial) const {
  if (serial <= kUnknownThreadSerial || serial - kUnknownThreadSerial > threads_.size()) return nullptr;
  return &threads_[serial - kUnknownThreadSerial - 1];
}

const ThreadInfo* ThreadRegistry::find_by_object_id(uint64_t object_id) const {
  uint64_t index = registry_object_index(RegistryObjectKind::kThread, object_id);
  if (index == 0 || index > threads_.size()) return nullptr;
  return &threads_[index - 1];
}

}  // namespace fasthprof
