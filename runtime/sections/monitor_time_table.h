// monitor=y's MONITOR TIME (docs/compatibility.md §2.7): contended time and count per (trace at the
// contended enter, monitor class), ranked and cut at a report, then restarted.
//
// Threads: the profile's owner alone.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "records/profile_writer.h"
#include "records/report_rows.h"

namespace fasthprof {

struct MonitorTimeReport {
  uint64_t total_ns = 0;  // every contended enter since the last report, cut rows included
  uint64_t events = 0;
  std::vector<MonitorTimeRow> rows;  // ranked, cut at cutoff
};

// Contended time per (trace at the contended enter, monitor class), the original's key.
class MonitorTimeTable {
 public:
  void add(uint32_t trace_serial, std::string_view signature, uint64_t waited_ns);

  // The rows sorted by time, then count (then trace serial and class, so that a report never
  // depends on the sort's whims), cut at the first whose share of the total is below cutoff;
  // then every time and count starts again from zero, so that the next report shows what
  // happened after this one.
  MonitorTimeReport take_report(double cutoff);

  bool empty() const { return events_ == 0; }

 private:
  struct Entry {
    uint64_t time_ns = 0;
    uint64_t count = 0;
  };
  // Keyed by "<trace serial>\0<signature>"; one entry per place and class that ever contended.
  std::unordered_map<std::string, Entry> entries_;
  uint64_t total_ns_ = 0;
  uint64_t events_ = 0;
};

// The report's MONITOR TIME (docs/compatibility.md §2.7, with the unit fixed): TRACEs of its rows
// first, then the section; written when there was any contention since the last report (total
// rounded to whole milliseconds), nothing otherwise.
void write_monitor_time_section(ProfileWriter& writer, const MonitorTimeReport& report, std::time_t when);

}  // namespace fasthprof
