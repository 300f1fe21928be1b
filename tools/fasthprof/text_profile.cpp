#include "text_profile.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>

namespace fasthprof::cli {

namespace {

constexpr std::string_view kOldHeader = "count callee caller time";

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// A decimal number at the start of *text, which moves past it; false when there is none.
bool take_number(std::string_view* text, uint64_t* value) {
  size_t at = 0;
  uint64_t result = 0;
  while (at < text->size() && (*text)[at] >= '0' && (*text)[at] <= '9') {
    if (at == 18) return false;
    result = result * 10 + static_cast<uint64_t>((*text)[at] - '0');
    ++at;
  }
  if (at == 0) return false;
  *value = result;
  text->remove_prefix(at);
  return true;
}

void skip_spaces(std::string_view* text) {
  while (!text->empty() && (text->front() == ' ' || text->front() == '\t')) text->remove_prefix(1);
}

// The next word (up to a space) of *text, which moves past it and the spaces after.
std::string_view take_word(std::string_view* text) {
  skip_spaces(text);
  const size_t end = std::min(text->find(' '), text->size());
  std::string_view word = text->substr(0, end);
  text->remove_prefix(end);
  skip_spaces(text);
  return word;
}

// "67.86%" in hundredths; false when it is not such a number.
bool parse_percent(std::string_view word, uint32_t* hundredths) {
  uint64_t whole = 0;
  uint64_t fraction = 0;
  if (!take_number(&word, &whole) || whole > 100 || word.size() != 4 || word[0] != '.' || word[3] != '%') return false;
  word.remove_prefix(1);
  word.remove_suffix(1);
  if (!take_number(&word, &fraction) || !word.empty()) return false;
  *hundredths = static_cast<uint32_t>(whole * 100 + fraction);
  return true;
}

// The date the agent prints (C's asctime form, "Sat Nov 28 11:58:05 2026", local time) at the
// end of text, as seconds since 1970; 0 when there is none.
int64_t trailing_date(std::string_view text) {
  constexpr size_t kDateLength = 24;
  if (text.size() < kDateLength) return 0;
  const std::string date(text.substr(text.size() - kDateLength));
  std::tm parts{};
  const char* end = strptime(date.c_str(), "%a %b %d %H:%M:%S %Y", &parts);
  if (end == nullptr || *end != '\0') return 0;
  parts.tm_isdst = -1;
  const std::time_t seconds = std::mktime(&parts);
  return seconds < 0 ? 0 : static_cast<int64_t>(seconds);
}

// "(total = N" after a BEGIN; false when it is not there.
bool parse_total(std::string_view text, uint64_t* total) {
  const size_t at = text.find("(total = ");
  if (at == std::string_view::npos) return false;
  text.remove_prefix(at + 9);
  return take_number(&text, total);
}

// A frame of a TRACE line, "\tjava.lang.String.indexOf(String.java:42)", as "java.lang.String.indexOf";
// a cpu=old name "java.lang.String.charAt(I)C" the same way.
std::string frame_name(std::string_view text) {
  const size_t open = text.find('(');
  if (open != std::string_view::npos && open > 0) text = text.substr(0, open);
  std::string name(text);
  for (char& c : name) {
    if (c == ';') c = ':';
  }
  return name;
}

bool failed(std::string* error, const char* what, uint64_t line) {
  *error = std::string(what) + " at line " + std::to_string(line);
  return false;
}

}  // namespace

uint64_t TextRankedSection::row_micros(const TextRankedRow& row) const {
  if (kind == TextSectionKind::kCpuSamples) return 0;
  return static_cast<uint64_t>(std::llround(static_cast<double>(row.self_hundredths) * static_cast<double>(total) / 10.0));
}

bool looks_like_old_profile(const uint8_t* data, uint64_t size) {
  return size >= kOldHeader.size() && std::memcmp(data, kOldHeader.data(), kOldHeader.size()) == 0;
}

bool TextProfile::load(const uint8_t* data, uint64_t size, std::string* error) {
  const char* text = reinterpret_cast<const char*>(data);
  uint64_t start = 0;
  while (start < size) {
    const void* newline = std::memchr(text + start, '\n', size - start);
    const uint64_t end = newline == nullptr ? size : static_cast<uint64_t>(static_cast<const char*>(newline) - text);
    std::string_view one(text + start, end - start);
    if (!one.empty() && one.back() == '\r') one.remove_suffix(1);
    ++line_number_;
    if (!line(one, error)) return false;
    start = end + 1;
  }
  if (state_ == State::kRanked || state_ == State::kRankedHeader || state_ == State::kDump) {
    return failed(error, "a section that does not end", line_number_);
  }
  return true;
}

bool TextProfile::line(std::string_view text, std::string* error) {
  switch (state_) {
    case State::kSkip:
      if (text == skip_until_) state_ = State::kTop;
      return true;
    case State::kRankedHeader:
      if (!starts_with(text, "rank ")) return failed(error, "no rank header after BEGIN", line_number_);
      state_ = State::kRanked;
      return true;
    case State::kRanked: return ranked_row(text, error);
    case State::kDump: return dump_line(text, error);
    case State::kOld:
      if (!text.empty() && text[0] >= '0' && text[0] <= '9') return old_row(text, error);
      state_ = State::kTop;
      break;
    case State::kTrace:
      if (!text.empty() && text[0] == '\t') {
        text.remove_prefix(1);
        if (text == "<empty>") return true;
        std::string name = frame_name(text);
        constexpr std::string_view kNative = "Native method)";
        if (text.size() > kNative.size() && text.substr(text.size() - kNative.size()) == kNative) natives_.insert(name);
        traces_[current_trace_].frames.push_back(std::move(name));
        return true;
      }
      state_ = State::kTop;
      break;
    case State::kTop: break;
  }
  if (line_number_ == 1 && starts_with(text, "JAVA PROFILE ")) {
    created_seconds_ = trailing_date(text);
  } else if (starts_with(text, "THREAD START (")) {
    const size_t id_at = text.find("id = ");
    const size_t name_at = text.find("name=\"");
    std::string_view rest = id_at == std::string_view::npos ? std::string_view() : text.substr(id_at + 5);
    uint64_t serial = 0;
    if (take_number(&rest, &serial) && name_at != std::string_view::npos) {
      std::string_view name = text.substr(name_at + 6);
      const size_t quote = name.find("\", group=");
      threads_[static_cast<uint32_t>(serial)] = std::string(name.substr(0, std::min(quote, name.size())));
    }
  } else if (starts_with(text, "TRACE ") && text.size() > 6 && text[6] >= '0' && text[6] <= '9') {
    std::string_view rest = text.substr(6);
    uint64_t serial = 0;
    if (!take_number(&rest, &serial) || rest.empty() || rest[0] != ':') return failed(error, "a TRACE line", line_number_);
    current_trace_ = static_cast<uint32_t>(serial);
    TextTrace& trace = traces_[current_trace_];
    trace.frames.clear();
    const size_t thread_at = rest.find("(thread=");
    uint64_t thread = 0;
    if (thread_at != std::string_view::npos) {
      rest.remove_prefix(thread_at + 8);
      if (take_number(&rest, &thread)) {
        trace.thread_serial = static_cast<uint32_t>(thread);
        ++traces_with_thread_;
      }
    }
    state_ = State::kTrace;
  } else if (starts_with(text, "CPU SAMPLES BEGIN") || starts_with(text, "CPU TIME (ms) BEGIN") ||
             starts_with(text, "MONITOR TIME BEGIN")) {
    TextRankedSection section;
    section.kind = text[0] == 'M'    ? TextSectionKind::kMonitorTime
                   : text[4] == 'T' ? TextSectionKind::kCpuTime
                                    : TextSectionKind::kCpuSamples;
    section.line = line_number_;
    if (!parse_total(text, &section.total)) return failed(error, "no total on a BEGIN line", line_number_);
    section.written_seconds = trailing_date(text);
    sections_.push_back(std::move(section));
    state_ = State::kRankedHeader;
  } else if (text == "MONITOR DUMP BEGIN") {
    dumps_.emplace_back().line = line_number_;
    state_ = State::kDump;
  } else if (text == kOldHeader) {
    state_ = State::kOld;
  } else if (starts_with(text, "HEAP DUMP BEGIN")) {
    skip_until_ = "HEAP DUMP END";
    state_ = State::kSkip;
  } else if (starts_with(text, "SITES BEGIN")) {
    skip_until_ = "SITES END";
    state_ = State::kSkip;
  }
  return true;
}

// "   1 67.86% 67.86%    1000 301087 CpuTimes.b", or the section's END line.
bool TextProfile::ranked_row(std::string_view text, std::string* error) {
  if (text == "CPU SAMPLES END" || text == "CPU TIME (ms) END" || text == "MONITOR TIME END") {
    state_ = State::kTop;
    return true;
  }
  TextRankedRow row;
  uint64_t rank = 0;
  uint64_t trace = 0;
  std::string_view rank_word = take_word(&text);
  uint32_t accumulated = 0;
  std::string_view count_word;
  std::string_view trace_word;
  if (!take_number(&rank_word, &rank) || !rank_word.empty() || !parse_percent(take_word(&text), &row.self_hundredths) ||
      !parse_percent(take_word(&text), &accumulated) || (count_word = take_word(&text), !take_number(&count_word, &row.count)) ||
      !count_word.empty() || (trace_word = take_word(&text), !take_number(&trace_word, &trace)) || !trace_word.empty() ||
      text.empty()) {
    return failed(error, "a row that is not rank, self, accum, count, trace, name", line_number_);
  }
  row.trace_serial = static_cast<uint32_t>(trace);
  TextRankedSection& section = sections_.back();
  if (section.kind == TextSectionKind::kMonitorTime) {
    constexpr std::string_view kJava = " (Java)";
    if (text.size() > kJava.size() && text.substr(text.size() - kJava.size()) == kJava) text.remove_suffix(kJava.size());
  }
  row.name.assign(text);
  section.rows.push_back(std::move(row));
  return true;
}

bool TextProfile::dump_line(std::string_view text, std::string* error) {
  MonitorDump& dump = dumps_.back();
  if (text == "MONITOR DUMP END") {
    state_ = State::kTop;
    return true;
  }
  std::string_view rest = text;
  skip_spaces(&rest);
  uint64_t value = 0;
  if (starts_with(rest, "(")) {
    dump.note.assign(rest);
  } else if (starts_with(rest, "THREAD ")) {
    rest.remove_prefix(7);
    MonitorDumpThread thread;
    if (!take_number(&rest, &value)) return failed(error, "a MONITOR DUMP thread", line_number_);
    thread.thread_serial = static_cast<uint32_t>(value);
    const size_t trace_at = rest.find("trace ");
    const size_t status_at = rest.find("status: ");
    if (trace_at == std::string_view::npos || status_at == std::string_view::npos) {
      return failed(error, "a MONITOR DUMP thread", line_number_);
    }
    std::string_view trace = rest.substr(trace_at + 6);
    if (take_number(&trace, &value)) thread.trace_serial = static_cast<uint32_t>(value);
    thread.status.assign(rest.substr(status_at + 8));
    dump.threads.push_back(std::move(thread));
  } else if (starts_with(rest, "MONITOR ")) {
    rest.remove_prefix(8);
    MonitorDumpMonitor monitor;
    constexpr std::string_view kUnowned = " unowned";
    if (rest.size() > kUnowned.size() && rest.substr(rest.size() - kUnowned.size()) == kUnowned) {
      rest.remove_suffix(kUnowned.size());
    } else {
      monitor.owned = true;
    }
    monitor.name.assign(rest);
    dump.monitors.push_back(std::move(monitor));
  } else if (!dump.monitors.empty() && (starts_with(rest, "owner: thread ") || starts_with(rest, "waiting to "))) {
    MonitorDumpMonitor& monitor = dump.monitors.back();
    if (starts_with(rest, "owner: thread ")) {
      rest.remove_prefix(14);
      if (take_number(&rest, &value)) monitor.owner = static_cast<uint32_t>(value);
      const size_t count_at = rest.find("entry count: ");
      if (count_at != std::string_view::npos) {
        rest.remove_prefix(count_at + 13);
        take_number(&rest, &monitor.entry_count);
      }
      return true;
    }
    std::vector<uint32_t>& threads = starts_with(rest, "waiting to enter:") ? monitor.entering : monitor.notified;
    for (size_t at = rest.find("thread "); at != std::string_view::npos; at = rest.find("thread ")) {
      rest.remove_prefix(at + 7);
      if (take_number(&rest, &value)) threads.push_back(static_cast<uint32_t>(value));
    }
  } else if (!rest.empty()) {
    return failed(error, "a MONITOR DUMP line", line_number_);
  }
  return true;
}

// "1000 CpuTimes.b()V CpuTimes.a()V 1144"; the caller may be "<unknown caller>".
bool TextProfile::old_row(std::string_view text, std::string* error) {
  TextOldRow row;
  std::string_view count = take_word(&text);
  const size_t last_space = text.rfind(' ');
  std::string_view millis = last_space == std::string_view::npos ? std::string_view() : text.substr(last_space + 1);
  text = text.substr(0, last_space == std::string_view::npos ? 0 : last_space);
  std::string_view callee = take_word(&text);
  std::string_view caller = text;
  if (!take_number(&count, &row.count) || !count.empty() || callee.empty() || caller.empty() ||
      !take_number(&millis, &row.millis) || !millis.empty()) {
    return failed(error, "a cpu=old line that is not count, callee, caller, time", line_number_);
  }
  row.callee = frame_name(callee);
  row.caller = frame_name(caller);
  old_rows_.push_back(std::move(row));
  return true;
}

const TextTrace* TextProfile::trace(uint32_t serial) const {
  auto found = traces_.find(serial);
  return found == traces_.end() ? nullptr : &found->second;
}

std::string TextProfile::folded_stack(uint32_t serial) const {
  const TextTrace* found = trace(serial);
  if (found == nullptr) return "<trace " + std::to_string(serial) + ">";
  if (found->frames.empty()) return "<empty trace>";
  std::string folded;
  for (auto frame = found->frames.rbegin(); frame != found->frames.rend(); ++frame) {
    if (!folded.empty()) folded += ';';
    folded += *frame;
  }
  return folded;
}

std::string TextProfile::top_frame(uint32_t serial) const {
  const TextTrace* found = trace(serial);
  if (found == nullptr) return "<trace " + std::to_string(serial) + ">";
  return found->frames.empty() ? std::string("<empty trace>") : found->frames.front();
}

std::string TextProfile::thread_name(uint32_t serial) const {
  auto found = threads_.find(serial);
  return found == threads_.end() ? "thread " + std::to_string(serial) : found->second;
}

bool TextProfile::has(TextSectionKind kind) const {
  for (const TextRankedSection& section : sections_) {
    if (section.kind == kind) return true;
  }
  return false;
}

}  // namespace fasthprof::cli
