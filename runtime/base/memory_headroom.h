// How much memory the machine and the process's memory cgroup have left, read from /proc and
// /sys: what a heap dump by fork must check before it forks (a child alive while the program runs
// on costs, page by page, up to the program's resident memory, since every page the program
// writes is copied for it).
//
//   /proc/meminfo           MemAvailable; CommitLimit and Committed_AS under overcommit policy 2
//   /proc/sys/vm/overcommit_memory
//   /proc/self/statm        resident pages
//   /proc/self/cgroup       "0::/path" (v2) or "N:...memory...:/path" (v1)
//   /sys/fs/cgroup/<path>/memory.max, memory.current                      (v2)
//   /sys/fs/cgroup/memory/<path>/memory.limit_in_bytes, memory.usage_in_bytes (v1)
//
// Inside a container the cgroup path named in /proc/self/cgroup is often not below the mounted
// /sys/fs/cgroup (the container sees its own cgroup as the root): the folder is then looked for
// from the path up to the mount's root, and the tightest limit on the way counts.
//
// The parsing is pure text functions; read_memory_headroom() does the reading, from a
// root folder that tests point at a planted tree. Threads: any; allocates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fasthprof {

struct MemoryHeadroom {
  uint64_t resident_bytes = 0;   // the process's resident memory
  uint64_t available_bytes = 0;  // the least of the limits below that apply
  std::string limited_by;        // which limit gave available_bytes, for messages
  int overcommit_policy = 0;     // /proc/sys/vm/overcommit_memory: 0 heuristic, 1 always, 2 never
};

// A field of /proc/meminfo in bytes ("MemAvailable:   23673044 kB"), nullopt when absent.
std::optional<uint64_t> meminfo_bytes(std::string_view meminfo, std::string_view field);

// The memory cgroup path of /proc/self/cgroup's text: the v1 line whose controllers include
// "memory", else the v2 line ("0::/path"); *v2 says which. nullopt when neither is there.
std::optional<std::string> memory_cgroup_path(std::string_view proc_cgroup, bool* v2);

// A cgroup limit file's value ("max" and v1's huge "no limit" values: nullopt).
std::optional<uint64_t> cgroup_limit(std::string_view text);

// Reads the headroom from the files below root ("/" on a real machine). nullopt with *error when
// the process's own figures (meminfo, statm) cannot be read; a missing cgroup is no limit.
std::optional<MemoryHeadroom> read_memory_headroom(const std::string& root, std::string* error);

// Bytes as whole megabytes for messages, rounded up ("17 MB").
std::string megabytes(uint64_t bytes);

// Whether a child that may come to copy share (0..1) of the resident memory fits in what is left,
// keeping reserve_bytes for the program; *reason says what is short when it does not fit.
bool fork_fits(const MemoryHeadroom& headroom, double share, uint64_t reserve_bytes, std::string* reason);

}  // namespace fasthprof
