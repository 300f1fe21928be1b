// The methods injected code names (agent/instrument/injected_methods.h).
#include "instrument/injected_methods.h"

#include "base/java_names.h"

namespace fasthprof {

std::string InjectedMethods::key_of(std::string_view class_name, std::string_view method_name,
                                    std::string_view descriptor) {
  std::string key;
  key.reserve(class_name.size() + method_name.size() + descriptor.size() + 2);
  key.append(class_name).append(1, '.').append(method_name).append(1, ' ').append(descriptor);
  return key;
}

uint32_t InjectedMethods::add_locked(std::string_view class_name, std::string_view method_name,
                                     std::string_view descriptor, std::string key) {
  methods_.push_back({std::string(class_name), std::string(method_name), std::string(descriptor), {}, {}});
  auto id = static_cast<uint32_t>(methods_.size());
  by_key_[std::move(key)] = id;
  return id;
}

uint32_t InjectedMethods::add(std::string_view class_name, std::string_view method_name,
                              std::string_view descriptor) {
  std::string key = key_of(class_name, method_name, descriptor);
  std::lock_guard<std::mutex> lock(mutex_);
  return add_locked(class_name, method_name, descriptor, std::move(key));
}

uint32_t InjectedMethods::find_or_add(std::string_view class_name, std::string_view method_name,
                                      std::string_view descriptor) {
  std::string key = key_of(class_name, method_name, descriptor);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) return it->second;
  return add_locked(class_name, method_name, descriptor, std::move(key));
}

void InjectedMethods::set_source_file(uint32_t id, const std::string& source_file) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id >= 1 && id <= methods_.size()) methods_[id - 1].source_file = source_file;
}

void InjectedMethods::add_line(uint32_t id, uint32_t offset, int32_t line) {
  if (line < 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (id >= 1 && id <= methods_.size()) methods_[id - 1].lines.push_back({static_cast<int64_t>(offset), line});
}

void InjectedMethods::add_lines(uint32_t id, const std::vector<std::pair<uint32_t, int32_t>>& lines) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id < 1 || id > methods_.size()) return;
  std::vector<LineNumberEntry>& table = methods_[id - 1].lines;
  for (const auto& [offset, line] : lines) {
    if (line >= 0) table.push_back({static_cast<int64_t>(offset), line});
  }
}

uint32_t InjectedMethods::find(const std::string& class_name, const std::string& method_name,
                               const std::string& descriptor) {
  std::string key = key_of(class_name, method_name, descriptor);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_key_.find(key);
  return it == by_key_.end() ? 0 : it->second;
}

bool InjectedMethods::describe(uint32_t id, OldMethodName* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id < 1 || id > methods_.size()) return false;
  const Method& method = methods_[id - 1];
  out->class_name = java_name("L" + method.class_name + ";");
  out->method_name = method.method_name;
  out->signature = method.descriptor;
  return true;
}

bool InjectedMethods::resolve_method(uint64_t method, MethodInfo* out) {
  auto id = static_cast<uint32_t>(method & ~kMark);
  std::lock_guard<std::mutex> lock(mutex_);
  if ((method & kMark) == 0 || id < 1 || id > methods_.size()) return false;
  const Method& found = methods_[id - 1];
  out->class_signature = "L" + found.class_name + ";";
  out->name = found.method_name;
  out->signature = found.descriptor;
  out->source_file = found.source_file;
  out->line_table = found.lines;
  return true;
}

size_t InjectedMethods::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return methods_.size();
}

}  // namespace fasthprof
