#include "hotspot_structs.h"

#include <dlfcn.h>
#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fasthprof {

namespace {

// An exported table of libjvm.so, looked up by name; null when absent.
template <typename T>
T* vm_symbol(const char* name) {
  return static_cast<T*>(dlsym(RTLD_DEFAULT, name));
}

// The tables describe their own layout: each exported *Offset/*Stride variable says where a field
// sits inside an entry, so nothing here depends on one JDK's struct layout.
struct StructTable {
  const char* entries = nullptr;
  uint64_t stride = 0, type_name = 0, field_name = 0, is_static = 0, offset = 0, address = 0;

  bool load() {
    auto** base = vm_symbol<char*>("gHotSpotVMStructs");
    auto* strides = vm_symbol<uint64_t>("gHotSpotVMStructEntryArrayStride");
    auto* type_names = vm_symbol<uint64_t>("gHotSpotVMStructEntryTypeNameOffset");
    auto* field_names = vm_symbol<uint64_t>("gHotSpotVMStructEntryFieldNameOffset");
    auto* statics = vm_symbol<uint64_t>("gHotSpotVMStructEntryIsStaticOffset");
    auto* offsets = vm_symbol<uint64_t>("gHotSpotVMStructEntryOffsetOffset");
    auto* addresses = vm_symbol<uint64_t>("gHotSpotVMStructEntryAddressOffset");
    if (base == nullptr || *base == nullptr || strides == nullptr || type_names == nullptr ||
        field_names == nullptr || statics == nullptr || offsets == nullptr || addresses == nullptr || *strides == 0) {
      return false;
    }
    entries = *base;
    stride = *strides;
    type_name = *type_names;
    field_name = *field_names;
    is_static = *statics;
    offset = *offsets;
    address = *addresses;
    return true;
  }

  // The entry for type.field: its address when static, its offset otherwise.
  std::optional<uint64_t> find(const char* type, const char* field, bool want_static) const {
    // The table ends with an entry whose type name is null.
    for (const char* entry = entries;; entry += stride) {
      const char* entry_type = *reinterpret_cast<const char* const*>(entry + type_name);
      if (entry_type == nullptr) return std::nullopt;
      const char* entry_field = *reinterpret_cast<const char* const*>(entry + field_name);
      if (entry_field == nullptr || std::strcmp(entry_type, type) != 0 || std::strcmp(entry_field, field) != 0) {
        continue;
      }
      bool entry_static = *reinterpret_cast<const int32_t*>(entry + is_static) != 0;
      if (entry_static != want_static) return std::nullopt;
      if (want_static) return reinterpret_cast<uint64_t>(*reinterpret_cast<void* const*>(entry + address));
      return *reinterpret_cast<const uint64_t*>(entry + offset);
    }
  }
};

// The size of a VM type, from gHotSpotVMTypes.
std::optional<uint64_t> type_size(const char* type) {
  auto** base = vm_symbol<char*>("gHotSpotVMTypes");
  auto* strides = vm_symbol<uint64_t>("gHotSpotVMTypeEntryArrayStride");
  auto* names = vm_symbol<uint64_t>("gHotSpotVMTypeEntryTypeNameOffset");
  auto* sizes = vm_symbol<uint64_t>("gHotSpotVMTypeEntrySizeOffset");
  if (base == nullptr || *base == nullptr || strides == nullptr || names == nullptr || sizes == nullptr || *strides == 0) {
    return std::nullopt;
  }
  for (const char* entry = *base;; entry += *strides) {
    const char* name = *reinterpret_cast<const char* const*>(entry + *names);
    if (name == nullptr) return std::nullopt;
    if (std::strcmp(name, type) == 0) return *reinterpret_cast<const uint64_t*>(entry + *sizes);
  }
}

// The value of the constant `name` in gHotSpotVM<kind>Constants (kind "Int" or "Long"): entries of a
// name and a value, ending with a null name, laid out as the exported offsets say.
template <typename Value>
std::optional<Value> constant(const char* kind, const char* name) {
  std::string prefix = std::string("gHotSpotVM") + kind + "Constant";
  auto** base = vm_symbol<char*>((prefix + "s").c_str());
  auto* strides = vm_symbol<uint64_t>((prefix + "EntryArrayStride").c_str());
  auto* names = vm_symbol<uint64_t>((prefix + "EntryNameOffset").c_str());
  auto* values = vm_symbol<uint64_t>((prefix + "EntryValueOffset").c_str());
  if (base == nullptr || *base == nullptr || strides == nullptr || names == nullptr || values == nullptr ||
      *strides == 0) {
    return std::nullopt;
  }
  for (const char* entry = *base;; entry += *strides) {
    const char* entry_name = *reinterpret_cast<const char* const*>(entry + *names);
    if (entry_name == nullptr) return std::nullopt;
    if (std::strcmp(entry_name, name) == 0) return *reinterpret_cast<const Value*>(entry + *values);
  }
}

}  // namespace

std::optional<int32_t> hotspot_int_constant(const char* name) { return constant<int32_t>("Int", name); }

std::optional<uint64_t> hotspot_long_constant(const char* name) { return constant<uint64_t>("Long", name); }

std::optional<uint64_t> hotspot_field_offset(const char* type, const char* field) {
  StructTable table;
  if (!table.load()) return std::nullopt;
  return table.find(type, field, false);
}

std::optional<uint64_t> hotspot_type_size(const char* type) { return type_size(type); }

std::optional<uint64_t> hotspot_static_address(const char* type, const char* field) {
  StructTable table;
  if (!table.load()) return std::nullopt;
  auto address = table.find(type, field, true);
  if (!address || *address == 0) return std::nullopt;
  return address;
}

namespace {

// One entry of HotSpot's table of -XX flags, as the struct tables describe it.
struct FlagEntry {
  void* value = nullptr;     // the flag's storage (JVMFlag::_addr)
  std::optional<int> type;   // JVMFlag::_type, when the tables list it
  int* origin = nullptr;     // JVMFlag::_flags, when the tables list it: who set the value, in its low bits
};

std::optional<FlagEntry> find_flag(std::string_view name) {
  StructTable table;
  if (!table.load()) return std::nullopt;
  auto flags = table.find("JVMFlag", "flags", true);
  auto count = table.find("JVMFlag", "numFlags", true);
  auto name_at = table.find("JVMFlag", "_name", false);
  auto value_at = table.find("JVMFlag", "_addr", false);
  auto type_at = table.find("JVMFlag", "_type", false);
  auto flags_at = table.find("JVMFlag", "_flags", false);
  auto origin_size = type_size("JVMFlag::Flags");  // the origin is written as an int: only when it is one
  auto size = type_size("JVMFlag");
  if (!flags || !count || !name_at || !value_at || !size || *flags == 0 || *count == 0 || *size == 0) {
    return std::nullopt;
  }
  // flags is the address of the static JVMFlag* pointing at the table; numFlags the address of a size_t.
  const char* table_start = *reinterpret_cast<const char* const*>(*flags);
  size_t entries = *reinterpret_cast<const size_t*>(*count);
  if (table_start == nullptr) return std::nullopt;
  for (size_t i = 0; i < entries; ++i) {
    const char* entry = table_start + i * *size;
    const char* flag_name = *reinterpret_cast<const char* const*>(entry + *name_at);
    if (flag_name == nullptr || name != flag_name) continue;
    FlagEntry found;
    found.value = *reinterpret_cast<void* const*>(entry + *value_at);
    if (found.value == nullptr) return std::nullopt;
    if (type_at) found.type = *reinterpret_cast<const int*>(entry + *type_at);
    if (flags_at && origin_size == sizeof(int)) found.origin = reinterpret_cast<int*>(const_cast<char*>(entry) + *flags_at);
    return found;
  }
  return std::nullopt;
}

}  // namespace

std::optional<bool> hotspot_bool_flag(std::string_view name) {
  auto flag = find_flag(name);
  if (!flag) return std::nullopt;
  return *static_cast<const bool*>(flag->value);
}

std::optional<int32_t> hotspot_int_flag(std::string_view name) {
  auto flag = find_flag(name);
  if (!flag) return std::nullopt;
  return *static_cast<const int32_t*>(flag->value);
}

namespace {

// The flag `name` when its type is that of the flag `like`: the type's number differs between JDKs,
// so a flag is known to be a bool or a list by having the type of one that is.
std::optional<FlagEntry> find_flag_like(std::string_view name, std::string_view like) {
  auto flag = find_flag(name);
  auto model = find_flag(like);
  if (!flag || !model || !flag->type || !model->type || *flag->type != *model->type) return std::nullopt;
  return flag;
}

}  // namespace

bool hotspot_set_bool_flag(std::string_view name, bool value, std::string_view like) {
  auto flag = find_flag_like(name, like);
  if (!flag) return false;
  *static_cast<bool*>(flag->value) = value;
  return true;
}

bool hotspot_settle_default_bool_flag(std::string_view name, bool value, std::string_view like) {
  // JVMFlag's origins, the same from JDK 9 to 25 (JVMFlagOrigin since JDK 16): the low four bits.
  constexpr int kOriginMask = 0xF, kDefault = 0, kErgonomic = 5;
  auto flag = find_flag_like(name, like);
  if (!flag || flag->origin == nullptr || (*flag->origin & kOriginMask) != kDefault) return false;
  *static_cast<bool*>(flag->value) = value;
  *flag->origin = (*flag->origin & ~kOriginMask) | kErgonomic;
  return true;
}

bool hotspot_append_to_list_flag(std::string_view name, std::string_view like, std::string_view items) {
  auto flag = find_flag_like(name, like);
  if (!flag) return false;
  auto** value = static_cast<const char**>(flag->value);
  std::string joined = *value != nullptr ? std::string(*value) : std::string();
  if (!joined.empty()) joined += ',';
  joined += items;
  // The VM keeps the pointer for its lifetime: the copy is never freed.
  char* kept = static_cast<char*>(std::malloc(joined.size() + 1));
  if (kept == nullptr) return false;
  std::memcpy(kept, joined.c_str(), joined.size() + 1);
  *value = kept;
  return true;
}

uintptr_t thread_stack_top() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* base = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  return reinterpret_cast<uintptr_t>(base) + size;
}

bool hotspot_interpreter_code(uintptr_t* low, uintptr_t* high) {
  auto code = hotspot_static_address("AbstractInterpreter", "_code");
  auto buffer_at = hotspot_field_offset("StubQueue", "_stub_buffer");
  auto limit_at = hotspot_field_offset("StubQueue", "_buffer_limit");
  if (!code || !buffer_at || !limit_at) return false;
  const char* queue = *reinterpret_cast<char* const*>(*code);
  if (queue == nullptr) return false;
  *low = *reinterpret_cast<const uintptr_t*>(queue + *buffer_at);
  *high = *low + static_cast<uintptr_t>(*reinterpret_cast<const int*>(queue + *limit_at));
  return *high > *low;
}

}  // namespace fasthprof
