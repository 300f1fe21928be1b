#include "base/memory_headroom.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace fasthprof {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// The lines of text, one at a time: false once there is none left.
bool next_line(std::string_view* text, std::string_view* line) {
  if (text->empty()) return false;
  size_t end = text->find('\n');
  *line = text->substr(0, end);
  text->remove_prefix(end == std::string_view::npos ? text->size() : end + 1);
  return true;
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::string megabytes(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MB"; }

std::optional<uint64_t> meminfo_bytes(std::string_view meminfo, std::string_view field) {
  std::string_view line;
  while (next_line(&meminfo, &line)) {
    if (line.size() <= field.size() || line.substr(0, field.size()) != field || line[field.size()] != ':') continue;
    std::string_view rest = trim(line.substr(field.size() + 1));
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    std::optional<uint64_t> value = parse_u64(rest.substr(0, digits));
    if (!value) return std::nullopt;
    std::string_view unit = trim(rest.substr(digits));
    if (unit.empty()) return value;
    if (unit != "kB" || *value > (UINT64_MAX >> 10)) return std::nullopt;
    return *value << 10;
  }
  return std::nullopt;
}

std::optional<std::string> memory_cgroup_path(std::string_view proc_cgroup, bool* v2) {
  std::optional<std::string> unified;
  std::string_view line;
  while (next_line(&proc_cgroup, &line)) {
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view hierarchy = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = line.substr(second + 1);
    if (path.empty() || path.front() != '/') continue;
    if (hierarchy == "0" && controllers.empty()) {
      unified = std::string(path);
      continue;
    }
    std::string_view rest = controllers;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      if (rest.substr(0, comma) == "memory") {
        *v2 = false;
        return std::string(path);
      }
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
  }
  if (unified) *v2 = true;
  return unified;
}

std::optional<uint64_t> cgroup_limit(std::string_view text) {
  text = trim(text);
  if (text == "max") return std::nullopt;
  std::optional<uint64_t> value = parse_u64(text);
  // v1 writes "no limit" as the largest page-aligned signed 64-bit value.
  if (!value || *value >= (uint64_t{1} << 62)) return std::nullopt;
  return value;
}

std::optional<MemoryHeadroom> read_memory_headroom(const std::string& root, std::string* error) {
  std::optional<std::string> meminfo = read_text(root + "/proc/meminfo");
  std::optional<uint64_t> available = meminfo ? meminfo_bytes(*meminfo, "MemAvailable") : std::nullopt;
  std::optional<std::string> statm = read_text(root + "/proc/self/statm");
  std::optional<uint64_t> resident_pages;
  if (statm) {
    std::string_view fields = *statm;
    size_t space = fields.find(' ');
    if (space != std::string_view::npos) {
      fields.remove_prefix(space + 1);
      resident_pages = parse_u64(fields.substr(0, fields.find(' ')));
    }
  }
  if (!available || !resident_pages) {
    *error = !available ? "no MemAvailable in " + root + "/proc/meminfo" : "cannot read " + root + "/proc/self/statm";
    return std::nullopt;
  }
  MemoryHeadroom headroom;
  headroom.resident_bytes = *resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  headroom.available_bytes = *available;
  headroom.limited_by = "MemAvailable";
  if (std::optional<std::string> policy = read_text(root + "/proc/sys/vm/overcommit_memory")) {
    uint64_t policy_value = parse_u64(trim(*policy)).value_or(0);
    headroom.overcommit_policy = policy_value <= 2 ? static_cast<int>(policy_value) : 0;
  }
  if (headroom.overcommit_policy == 2) {
    std::optional<uint64_t> limit = meminfo_bytes(*meminfo, "CommitLimit");
    std::optional<uint64_t> committed = meminfo_bytes(*meminfo, "Committed_AS");
    if (limit && committed) {
      uint64_t room = *limit > *committed ? *limit - *committed : 0;
      if (room < headroom.available_bytes) {
        headroom.available_bytes = room;
        headroom.limited_by = "the commit limit (vm.overcommit_memory=2)";
      }
    }
  }
  bool v2 = false;
  std::optional<std::string> cgroup_text = read_text(root + "/proc/self/cgroup");
  std::optional<std::string> path = cgroup_text ? memory_cgroup_path(*cgroup_text, &v2) : std::nullopt;
  if (!path) return headroom;
  std::string base = root + (v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory");
  const char* limit_file = v2 ? "/memory.max" : "/memory.limit_in_bytes";
  const char* usage_file = v2 ? "/memory.current" : "/memory.usage_in_bytes";
  // From the process's own cgroup up to the mount's root: every limit on the way applies.
  std::string at = *path;
  while (true) {
    std::string folder = base + (at == "/" ? "" : at);
    std::optional<std::string> limit_text = read_text(folder + limit_file);
    std::optional<std::string> usage_text = read_text(folder + usage_file);
    // 0: no limit here (a limit of 0 bytes would stop the cgroup's every process anyway).
    uint64_t limit = limit_text ? cgroup_limit(*limit_text).value_or(0) : 0;
    std::optional<uint64_t> usage = usage_text ? parse_u64(trim(*usage_text)) : std::nullopt;
    if (limit != 0 && usage) {
      uint64_t used = *usage;
      uint64_t room = limit > used ? limit - used : 0;
      if (room < headroom.available_bytes) {
        headroom.available_bytes = room;
        headroom.limited_by = std::string("the memory cgroup's limit (") + (v2 ? "memory.max " : "memory.limit_in_bytes ") +
                              megabytes(limit) + ", " + megabytes(used) + " used)";
      }
    }
    if (at == "/" || at.empty()) break;
    size_t slash = at.rfind('/');
    at = slash == 0 ? "/" : at.substr(0, slash);
  }
  return headroom;
}

bool fork_fits(const MemoryHeadroom& headroom, double share, uint64_t reserve_bytes, std::string* reason) {
  auto copied = static_cast<uint64_t>(static_cast<double>(headroom.resident_bytes) * share);
  if (copied <= headroom.available_bytes && headroom.available_bytes - copied >= reserve_bytes) return true;
  *reason = "a child could copy " + megabytes(copied) + " of the " + megabytes(headroom.resident_bytes) +
            " resident, and " + megabytes(headroom.available_bytes) + " is left by " + headroom.limited_by +
            " (keeping " + megabytes(reserve_bytes) + " for the program)";
  return false;
}

}  // namespace fasthprof
