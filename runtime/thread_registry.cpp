#include "thread_registry.h"

#include "memory.h"

namespace fasthprof {

ThreadRegistry::ThreadRegistry() : pool_(memory::resource()), alive_(&pool_), serial_by_key_(&pool_) {}

ThreadRef ThreadRegistry::start_thread(uint64_t key) {
  auto known = serial_by_key_.find(key);
  if (known != serial_by_key_.end()) {
    const ThreadInfo& info = alive_.at(known->second);
    return ThreadRef{info.serial, info.object_id, false};
  }
  ++started_;
  ThreadInfo info;
  info.serial = kUnknownThreadSerial + started_;
  info.object_id = make_registry_object_id(RegistryObjectKind::kThread, started_);
  info.key = key;
  alive_.emplace(info.serial, info);
  serial_by_key_.emplace(key, info.serial);
  return ThreadRef{info.serial, info.object_id, true};
}

bool ThreadRegistry::end_thread(uint32_t serial) {
  auto found = alive_.find(serial);
  if (found == alive_.end()) return false;
  serial_by_key_.erase(found->second.key);
  alive_.erase(found);
  return true;
}

const ThreadInfo* ThreadRegistry::find(uint64_t key) const {
  auto known = serial_by_key_.find(key);
  return known == serial_by_key_.end() ? nullptr : find_by_serial(known->second);
}

const ThreadInfo* ThreadRegistry::find_by_serial(uint32_t serial) const {
  auto found = alive_.find(serial);
  return found == alive_.end() ? nullptr : &found->second;
}

const ThreadInfo* ThreadRegistry::find_by_object_id(uint64_t object_id) const {
  uint32_t serial = serial_of_object_id(object_id);
  return serial == 0 ? nullptr : find_by_serial(serial);
}

uint32_t ThreadRegistry::serial_of_object_id(uint64_t object_id) const {
  uint64_t index = registry_object_index(RegistryObjectKind::kThread, object_id);
  if (index == 0 || index > started_) return 0;
  return kUnknownThreadSerial + static_cast<uint32_t>(index);
}

}  // namespace fasthprof
