#include "registries/frame_registry.h"

#include <algorithm>
#include <iterator>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/java_names.h"

namespace fasthprof {

namespace {

constexpr size_t kInitialSlots = 1024;

NameRef intern_optional(NameTable* names, const std::string& text) {
  return text.empty() ? NameRef{} : names->intern(text);
}

}  // namespace

uint64_t FrameRegistry::FrameKeyHash::operator()(const FrameKey& key) const {
  uint64_t words[2] = {key.method, static_cast<uint64_t>(key.location)};
  return XXH3_64bits(words, sizeof(words));
}

FrameRegistry::FrameRegistry(MethodResolver* resolver, bool line_numbers)
    : resolver_(resolver), line_numbers_(line_numbers), frame_by_key_(kInitialSlots) {}

uint32_t FrameRegistry::method_index(uint64_t method) {
  if (const uint32_t* known = method_by_id_.find(method)) return *known;
  Method& entry = methods_.emplace_back();
  const bool resolved = resolver_ != nullptr && resolver_->resolve_method(method, &entry.info);
  if (!resolved || entry.info.name.empty()) {
    // A method the VM no longer knows by the time its frame is named: one of a class unloaded
    // since (a hidden class's, such as a LambdaForm's, once nothing uses it). Its STACK FRAME
    // still names strings, as every frame record must.
    entry.info = MethodInfo{};
    entry.info.name = kUnknownMethodName;
    entry.info.signature = kUnknownMethodSignature;
    entry.info.class_signature = kUnknownClassSignature;
  }
  // Line tables may come unsorted; the search needs them ordered by start location.
  std::stable_sort(entry.info.line_table.begin(), entry.info.line_table.end(),
                   [](const LineNumberEntry& a, const LineNumberEntry& b) {
                     return a.start_location < b.start_location;
                   });
  entry.class_name = java_name(entry.info.class_signature);
  uint32_t index = static_cast<uint32_t>(methods_.size() - 1);
  method_by_id_.try_emplace(method, index);
  return index;
}

int32_t FrameRegistry::line_in(const Method& entry, int64_t location) const {
  const std::vector<LineNumberEntry>& table = entry.info.line_table;
  if (!line_numbers_) return kUnknownLine;
  if (entry.info.native_method) return kNativeMethodLine;
  if (location < 0 || table.empty()) return kUnknownLine;
  auto after = std::upper_bound(table.begin(), table.end(), location,
                                [](int64_t loc, const LineNumberEntry& e) { return loc < e.start_location; });
  if (after == table.begin()) return kUnknownLine;
  return std::prev(after)->line;
}

int32_t FrameRegistry::line_for(uint64_t method, int64_t location) {
  return line_in(methods_[method_index(method)], location);
}

FrameRef FrameRegistry::intern(uint64_t method, int64_t location) {
  FrameKey key{method, location};
  auto [frame, is_new] = frame_by_key_.find_or_insert(key, frame_by_key_.hash_of(key), [&] {
    uint32_t m = method_index(method);
    frames_.push_back(Frame{method, location, m, line_in(methods_[m], location), false});
    return std::pair<FrameKey, uint32_t>(key, static_cast<uint32_t>(frames_.size()));
  });
  return FrameRef{make_id(IdSpace::kFrame, *frame), is_new};
}

std::optional<FrameView> FrameRegistry::find(uint64_t frame_id) const {
  uint64_t index = id_index(frame_id);
  if (id_space(frame_id) != IdSpace::kFrame || index == 0 || index > frames_.size()) return std::nullopt;
  const Frame& frame = frames_[index - 1];
  const Method& method = methods_[frame.method_index];
  return FrameView{frame_id, frame.method, frame.location, frame.line, &method.info, method.class_name,
                   frame.written};
}

FrameRecord FrameRegistry::claim_record(uint64_t frame_id, NameTable* names) {
  uint64_t index = id_index(frame_id);
  if (id_space(frame_id) != IdSpace::kFrame || index == 0 || index > frames_.size()) return FrameRecord{};
  Frame& frame = frames_[index - 1];
  if (frame.written) return FrameRecord{};
  frame.written = true;
  const MethodInfo& info = methods_[frame.method_index].info;
  FrameRecord record;
  record.needed = true;
  record.frame_id = frame_id;
  record.method_name = intern_optional(names, info.name);
  record.method_signature = intern_optional(names, info.signature);
  record.source_file = intern_optional(names, info.source_file);
  record.class_serial = info.class_serial;
  record.line = frame.line;
  return record;
}

void FrameRegistry::reset_written() {
  for (Frame& frame : frames_) frame.written = false;
}

}  // namespace fasthprof
