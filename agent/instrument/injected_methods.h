// The methods injected code names (agent/instrument/class_instrumenter.h): cpu=times' entry and exit
// calls carry a method's ID, and allocation sites counted by injection name their method by one.
// A frame whose method number has kMark set holds such an ID instead of a jmethodID; the class
// tracker hands those to this table to resolve. A method that holds allocation sites also carries a
// line table of its sites (original code offset -> source line), so that a frame of it at a site's
// offset prints the site's line.
//
// Threads: any (its own mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "registries/frame_registry.h"
#include "sections/cpu_time_table.h"

namespace fasthprof {

class InjectedMethods final : public MethodResolver {
 public:
  // The high bit marks a frame's method number as a tracker ID rather than a jmethodID.
  static constexpr uint64_t kMark = uint64_t{1} << 63;

  // A new ID for (class, method, descriptor), all internal form; the latest one find() gives.
  uint32_t add(std::string_view class_name, std::string_view method_name, std::string_view descriptor);
  // The latest ID of (class, method, descriptor), or a new one when there is none.
  uint32_t find_or_add(std::string_view class_name, std::string_view method_name, std::string_view descriptor);
  void set_source_file(uint32_t id, const std::string& source_file);
  // One entry of the method's line table: the instruction at `offset` is on `line`.
  void add_line(uint32_t id, uint32_t offset, int32_t line);
  // The lines of the method's calls (offset in the original code, line; -1 lines are skipped).
  void add_lines(uint32_t id, const std::vector<std::pair<uint32_t, int32_t>>& lines);
  // The latest ID of (class, method, descriptor), 0 when none; all internal form.
  uint32_t find(const std::string& class_name, const std::string& method_name, const std::string& descriptor);
  bool describe(uint32_t id, OldMethodName* out);
  bool resolve_method(uint64_t method, MethodInfo* out) override;
  size_t size();

 private:
  struct Method {
    std::string class_name, method_name, descriptor, source_file;
    std::vector<LineNumberEntry> lines;
  };
  static std::string key_of(std::string_view class_name, std::string_view method_name, std::string_view descriptor);
  uint32_t add_locked(std::string_view class_name, std::string_view method_name, std::string_view descriptor,
                      std::string key);

  std::mutex mutex_;
  std::vector<Method> methods_;  // [id - 1]
  std::unordered_map<std::string, uint32_t> by_key_;
};

}  // namespace fasthprof
