// What the verbs read out of a text file (format=a) of the agent or the original HPROF: the
// sections a binary file cannot hold (cpu=times and cpu=old are refused with format=b, and so is
// monitor=y), and the CPU SAMPLES of a text run:
//   THREAD START              thread names by serial
//   TRACE N: [(thread=M)]     the frames that follow, top of the stack first
//   CPU SAMPLES / CPU TIME (ms) BEGIN ... END    ranked rows: self %, count, trace, method
//   MONITOR TIME BEGIN ... END                   ranked rows: self %, count, trace, monitor class
//   MONITOR DUMP BEGIN ... END                   thread states and monitors
//   count callee caller time  (cpu=old)          one line per (callee, caller) pair
// Heap dumps and SITES of a text file are passed over. One pass over the lines; the names are
// copied, so the bytes need not outlive the profile.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fasthprof::cli {

struct TextTrace {
  uint32_t thread_serial = 0;       // 0: the trace names no thread (thread=n)
  std::vector<std::string> frames;  // "java.lang.String.indexOf", top of the stack first
};

// One row of a ranked section: CPU SAMPLES, CPU TIME, MONITOR TIME.
struct TextRankedRow {
  uint32_t self_hundredths = 0;  // the self column in hundredths of a percent (67.86% is 6786)
  uint64_t count = 0;            // samples; calls (CPU TIME); contended enters (MONITOR TIME)
  uint32_t trace_serial = 0;
  std::string name;  // the method; MONITOR TIME: the monitor's class (without " (Java)")
};

enum class TextSectionKind { kCpuSamples, kCpuTime, kMonitorTime };

struct TextRankedSection {
  TextSectionKind kind = TextSectionKind::kCpuSamples;
  uint64_t line = 0;   // of its BEGIN line, from 1
  uint64_t total = 0;  // samples, or ms (CPU TIME, MONITOR TIME)
  int64_t written_seconds = 0;  // the BEGIN line's date, seconds since 1970; 0 when unreadable
  std::vector<TextRankedRow> rows;
  // The time of a row, from its share of the total: the section prints no other (precise to
  // 0.005 % of the total). In microseconds; 0 for CPU SAMPLES.
  uint64_t row_micros(const TextRankedRow& row) const;
};

// One line of the cpu=old table: calls of callee from caller, the pair's inclusive time in ms.
struct TextOldRow {
  uint64_t count = 0;
  std::string callee;  // "java.lang.String.charAt" (the signature left out)
  std::string caller;
  uint64_t millis = 0;
};

struct MonitorDumpThread {
  uint32_t thread_serial = 0;
  uint32_t trace_serial = 0;
  std::string status;  // "R", "CW", "S|MW", ...
};

struct MonitorDumpMonitor {
  std::string name;  // the class, as written ("LFoo$Lock;")
  bool owned = false;
  uint32_t owner = 0;
  uint64_t entry_count = 0;
  std::vector<uint32_t> entering;  // threads blocked entering it
  std::vector<uint32_t> notified;  // threads in Object.wait on it
};

struct MonitorDump {
  uint64_t line = 0;
  std::string note;  // a line in parentheses (monitors not listed under attach), or empty
  std::vector<MonitorDumpThread> threads;
  std::vector<MonitorDumpMonitor> monitors;
};

class TextProfile {
 public:
  // Reads the text in data[0, size). False with *error ("... at line N") at a line of a section
  // that does not read as the agent writes it.
  bool load(const uint8_t* data, uint64_t size, std::string* error);

  const std::unordered_map<uint32_t, std::string>& threads() const { return threads_; }
  const TextTrace* trace(uint32_t serial) const;
  // The trace's stack folded as HprofModel::folded_stack does ("<empty trace>", "<trace N>").
  std::string folded_stack(uint32_t serial) const;
  // The top frame's name, "<empty trace>" or "<trace N>".
  std::string top_frame(uint32_t serial) const;
  // The name of a thread serial ("thread N" when no THREAD START gave one).
  std::string thread_name(uint32_t serial) const;

  const std::vector<TextRankedSection>& sections() const { return sections_; }
  const std::vector<MonitorDump>& monitor_dumps() const { return dumps_; }
  const std::vector<TextOldRow>& old_rows() const { return old_rows_; }
  bool has(TextSectionKind kind) const;
  // The frames a TRACE line calls native ("(Thread.java:Native method)").
  const std::unordered_set<std::string>& native_frames() const { return natives_; }
  // Whether a trace names a thread (thread=y).
  bool has_threads() const { return traces_with_thread_ > 0; }
  // The first line's date ("JAVA PROFILE 1.0.1, created Sat Nov 28 11:58:05 2026"), seconds
  // since 1970 read in this machine's time zone (the agent writes its own); 0 when unreadable.
  int64_t created_seconds() const { return created_seconds_; }

 private:
  bool line(std::string_view text, std::string* error);
  bool ranked_row(std::string_view text, std::string* error);
  bool dump_line(std::string_view text, std::string* error);
  bool old_row(std::string_view text, std::string* error);

  enum class State { kTop, kTrace, kRanked, kRankedHeader, kDump, kOld, kSkip };
  State state_ = State::kTop;
  std::string_view skip_until_;
  uint64_t line_number_ = 0;
  uint32_t current_trace_ = 0;
  std::unordered_map<uint32_t, std::string> threads_;
  std::unordered_map<uint32_t, TextTrace> traces_;
  uint64_t traces_with_thread_ = 0;
  int64_t created_seconds_ = 0;
  std::unordered_set<std::string> natives_;
  std::vector<TextRankedSection> sections_;
  std::vector<MonitorDump> dumps_;
  std::vector<TextOldRow> old_rows_;
};

// Whether data starts like a cpu=old file (no file header: the table's own header line).
bool looks_like_old_profile(const uint8_t* data, uint64_t size);

}  // namespace fasthprof::cli
