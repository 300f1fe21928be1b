// cpu=times and cpu=old counts (docs/cpu_times.md): calls, self time and inclusive time per key,
// and the sections built from them (docs/compatibility.md §2.10). For cpu=times a key is a trace
// serial; for cpu=old a (callee, caller) pair of method IDs (the tracker's), as old_key() makes it.
//
// Times arrive in nanoseconds and print in milliseconds. CPU TIME rows are sorted by self time
// (most first, equal times by key), cut at the first row whose share of the total self time is
// below the cutoff; cpu=old rows are sorted by calls. A report restarts every count at zero, as
// the original's reset after each dump did.
//
// Threads: no locking inside. The agent's writer thread alone calls it.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fasthprof {

class ProfileWriter;

struct CpuTimeCounts {
  uint64_t calls = 0;
  uint64_t self_ns = 0;
  uint64_t total_ns = 0;  // inclusive: callees' time too
};

struct CpuTimeReportRow {
  uint64_t key = 0;
  CpuTimeCounts counts;
  double self_percent = 0;         // 0..100
  double accumulated_percent = 0;  // 0..100
};

struct CpuTimeReport {
  uint64_t total_ms = 0;  // self time over every key, cut-off ones included
  std::vector<CpuTimeReportRow> rows;
};

inline uint64_t old_key(uint32_t callee, uint32_t caller) {
  return (static_cast<uint64_t>(callee) << 32) | caller;
}

// Nanoseconds to the printed milliseconds (rounded to the nearest).
inline uint64_t ns_to_ms(uint64_t ns) { return (ns + 500'000) / 1'000'000; }

class CpuTimeTable {
 public:
  void add(uint64_t key, const CpuTimeCounts& counts);

  uint64_t calls() const { return calls_; }

  // CPU TIME rows at this cutoff (a fraction), then every count back to zero.
  CpuTimeReport take_report(double cutoff);

  // cpu=old rows: every key with a call, by calls (most first); then every count back to zero.
  CpuTimeReport take_old_report();

 private:
  std::unordered_map<uint64_t, CpuTimeCounts> counts_;
  uint64_t calls_ = 0;
};

// Writes one CPU TIME section (text only: cpu=times is refused with format=b): the TRACEs of the
// printed rows first, then `<title> BEGIN (total = N) <date>`, rows, `<title> END`. samples_title:
// cpu=samples is on too, and the original then titled both sections CPU SAMPLES.
void write_cpu_time_section(ProfileWriter& writer, const CpuTimeReport& report, bool samples_title,
                            std::time_t when);

// The cpu=old table: "count callee caller time", then one line per row. describe fills a
// method's class (Java form), name and descriptor for a tracker method ID, false when unknown.
struct OldMethodName {
  std::string class_name, method_name, signature;
};
void write_old_prof_section(ProfileWriter& writer, const CpuTimeReport& report,
                            const std::function<bool(uint32_t, OldMethodName*)>& describe);

}  // namespace fasthprof
