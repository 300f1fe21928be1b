// Classes as the output names them: a serial (LOAD CLASS, UNLOAD CLASS, FRAME, ALLOC SITES), a stable
// object ID for the java.lang.Class object (the agent tags the object with it, so every record and
// every heap dump agree), the JVM signature and the Java-form name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <deque>

#include "base/flat_map.h"
#include "base/hprof_format.h"
#include "base/ids.h"

namespace fasthprof {

struct ClassInfo {
  uint32_t serial = 0;
  uint64_t object_id = 0;   // RegistryObjectKind::kClass space
  std::string signature;    // JVM form, "Ljava/lang/String;"
  std::string name;         // Java form, "java.lang.String" (java_names.h)
  uint64_t loader_key = 0;  // opaque, chosen by the agent (0 = boot loader)
  bool loaded = false;      // false once unload() reported it
};

struct ClassRef {
  uint32_t serial = 0;
  uint64_t object_id = 0;
  bool is_new = false;  // the caller writes UTF8 (name) + LOAD CLASS
};

// Not thread-safe: the writer thread alone owns it. Pointers returned stay valid for the registry's
// lifetime.
class ClassRegistry {
 public:
  ClassRegistry() = default;
  ClassRegistry(const ClassRegistry&) = delete;
  ClassRegistry& operator=(const ClassRegistry&) = delete;

  // Finds the loaded class (signature, loader_key) or registers it with the next serial (from
  // kFirstClassSerial) and object ID. A class unloaded earlier and seen again is a new class with
  // a new serial. Allocates only when the class is new. Never fails.
  ClassRef register_class(std::string_view signature, uint64_t loader_key);

  // The loaded class (signature, loader_key), or nullptr. Never allocates.
  const ClassInfo* find(std::string_view signature, uint64_t loader_key) const;

  // Lookups over every class ever registered (unloaded ones included); nullptr when unknown.
  const ClassInfo* find_by_serial(uint32_t serial) const;
  const ClassInfo* find_by_object_id(uint64_t object_id) const;

  // Marks the class unloaded. Returns true exactly once per class, when the caller must write
  // UNLOAD CLASS; false for an unknown serial or a class already unloaded.
  bool unload(uint32_t serial);

  // Calls fn(const ClassInfo&) for every loaded class in serial order.
  template <typename Fn>
  void for_each_loaded(Fn&& fn) const {
    for (const ClassInfo& info : classes_) {
      if (info.loaded) fn(info);
    }
  }

  // Every loaded class's serial by signature alone (for names that carry no loader): where two
  // loaders each have one, the boot loader's, else the first registered. Replaces *out.
  void serials_by_signature(std::unordered_map<std::string, uint32_t>* out) const;

  size_t size() const { return classes_.size(); }  // classes ever registered
  size_t loaded_count() const { return loaded_count_; }

 private:
  struct Key {
    std::string_view signature;  // points into the ClassInfo (a deque never moves its elements)
    uint64_t loader_key;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    uint64_t operator()(const Key& key) const;
  };

  std::deque<ClassInfo> classes_;  // index = serial - kFirstClassSerial
  FlatMap<Key, uint32_t, KeyHash> loaded_;  // loaded classes only -> index
  size_t loaded_count_ = 0;
};

}  // namespace fasthprof
