#include "registries/thread_registry.h"

#include "base/memory.h"

namespace fasthprof {

ThreadRegistry::ThreadRegistry() : pool_(memory::resource()), alive_(&pool_) {}

ThreadRef ThreadRegistry::start_thread(uint64_t object_id) {
  uint64_t index = registry_object_index(RegistryObjectKind::kThread, object_id);
  if (index == 0 || index > UINT32_MAX - kUnknownThreadSerial) return ThreadRef{};
  auto serial = static_cast<uint32_t>(kUnknownThreadSerial + index);
  auto [entry, inserted] = alive_.try_emplace(serial, ThreadInfo{serial, object_id});
  if (!inserted) return ThreadRef{serial, object_id, false};
  ++started_;
  if (index > highest_index_) highest_index_ = index;
  return ThreadRef{serial, object_id, true};
}

bool ThreadRegistry::end_thread(uint32_t serial) {
  auto found = alive_.find(serial);
  if (found == alive_.end()) return false;
  alive_.erase(found);
  return true;
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
  if (index == 0 || index > highest_index_) return 0;
  return kUnknownThreadSerial + static_cast<uint32_t>(index);
}

}  // namespace fasthprof
