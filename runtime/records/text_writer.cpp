#include "records/text_writer.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <utility>

#include "base/hprof_format.h"
#include "records/report_rows.h"

namespace fasthprof {
namespace {

// What the record kinds of this file mean, written after the first line of every text output.
constexpr std::string_view kExplanation =
    "fasthprof text output (-agentlib:hprof=format=a), readable by the tools and scripts\n"
    "written for the JDK's HPROF agent.\n"
    "\n"
    "The file holds these kinds of records:\n"
    "\n"
    "THREAD START\n"
    "THREAD END      say when a Java thread began and finished. Other records name\n"
    "                threads by the id given here.\n"
    "\n"
    "TRACE           is one Java call stack, most recent frame first. Other records\n"
    "                name traces by their number: where objects were allocated, the\n"
    "                frames that hold heap roots, and the code that used the CPU.\n"
    "\n"
    "HEAP DUMP       lists every reachable object in the Java heap at one moment:\n"
    "\n"
    "                ROOT    an object the garbage collector starts from\n"
    "                OBJ     an ordinary object and the objects its fields refer to\n"
    "                ARR     an array and, for arrays of objects, its elements\n"
    "                CLS     a class, its superclass, loader and static references\n"
    "\n"
    "SITES           ranks allocation sites (a class and the TRACE that allocated it)\n"
    "                by the bytes they hold, with live and all-time totals.\n"
    "\n"
    "CPU SAMPLES     counts how often each TRACE was seen running when the threads\n"
    "                were sampled at a fixed interval. TRACEs with the largest share\n"
    "                of samples are where the program spends its time.\n"
    "\n"
    "CPU TIME        measures the time spent in each method itself (callees not\n"
    "                included) and how often it was called; \"count\" is the number of\n"
    "                calls of that TRACE, the times are in milliseconds.\n"
    "\n"
    "MONITOR TIME    measures how long threads waited to enter contended monitors,\n"
    "                per TRACE and monitor class; \"count\" is how often the monitor\n"
    "                was contended there. Times are in milliseconds.\n"
    "\n"
    "MONITOR DUMP    shows every thread with its state, and every monitor with its\n"
    "                owner and the threads waiting for it.\n"
    "\n"
    "HEAP DUMP, SITES, CPU SAMPLES, CPU TIME, MONITOR DUMP and MONITOR TIME are written\n"
    "when the program exits, and again each time the process receives SIGQUIT\n"
    "(kill -QUIT <pid>, or Ctrl-\\ in its terminal).\n";

constexpr const char* kDayNames[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonthNames[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

const char* cpu_section_name(CpuSection section) {
  return section == CpuSection::kSamples ? "CPU SAMPLES" : "CPU TIME (ms)";
}

// printf's "%.*s" wants an int length.
int len(std::string_view text) { return static_cast<int>(text.size()); }

}  // namespace

std::string ctime_text(const std::tm& time) {
  char text[64];
  int day = time.tm_wday >= 0 && time.tm_wday < 7 ? time.tm_wday : 0;
  int month = time.tm_mon >= 0 && time.tm_mon < 12 ? time.tm_mon : 0;
  std::snprintf(text, sizeof(text), "%s %s %2d %02d:%02d:%02d %d\n", kDayNames[day],
                kMonthNames[month], time.tm_mday, time.tm_hour, time.tm_min, time.tm_sec,
                time.tm_year + 1900);
  return text;
}

std::string local_ctime_text(time_t t) {
  std::tm broken_down{};
  localtime_r(&t, &broken_down);
  return ctime_text(broken_down);
}

std::string thread_status_text(uint32_t state) {
  std::string text;
  if (state & kThreadStateSuspended) text += "S|";
  if (state & kThreadStateInterrupted) text += "intr|";
  if (state & kThreadStateInNative) text += "native|";
  if (!(state & kThreadStateAlive)) {
    text += (state & kThreadStateTerminated) ? "ZO" : "NS";
  } else if (state & kThreadStateSleeping) {
    text += "SL";
  } else if (state & kThreadStateBlockedOnMonitorEnter) {
    text += "MW";
  } else if (state & kThreadStateWaiting) {
    text += "CW";
  } else if (state & kThreadStateRunnable) {
    text += "R";
  } else {
    text += "UN";
  }
  return text;
}

TextWriter::TextWriter(OutputStream& out, DateFormatter format_date)
    : out_(out), format_date_(std::move(format_date)) {
  if (!format_date_) format_date_ = local_ctime_text;
  buffer_.reserve(kFlushThreshold + 4096);
}

TextWriter::~TextWriter() { flush(); }

void TextWriter::flush() {
  if (buffer_.empty()) return;
  out_.write(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void TextWriter::flush_if_full() {
  if (buffer_.size() >= kFlushThreshold) flush();
}

void TextWriter::raw(std::string_view text) {
  buffer_.append(text);
  flush_if_full();
}

// Formats into the buffer, however long the result: the original's 1023-byte cut is gone.
void TextWriter::line(const char* format, ...) {
  char small[512];
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  int needed = std::vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  if (needed >= 0 && static_cast<size_t>(needed) < sizeof(small)) {
    buffer_.append(small, static_cast<size_t>(needed));
  } else if (needed > 0) {
    size_t start = buffer_.size();
    buffer_.resize(start + static_cast<size_t>(needed) + 1);
    std::vsnprintf(buffer_.data() + start, static_cast<size_t>(needed) + 1, format, again);
    buffer_.resize(start + static_cast<size_t>(needed));
  }
  va_end(again);
  flush_if_full();
}

void TextWriter::file_header(time_t created, bool no_live) {
  std::string date = format_date_(created);
  line("%s, created %.*s\n", kTextHeaderVersion, len(date), date.data());
  raw(kExplanation);
  if (no_live) {
    raw("\n"
        "live=n: objects were not followed after their allocation, so the live\n"
        "columns of SITES repeat the allocated ones (every allocation is counted).\n");
  }
  raw("\n--------\n\n");
}

void TextWriter::thread_start(uint64_t thread_object_id, uint32_t thread_serial,
                              std::string_view name, std::string_view group) {
  line("THREAD START (obj=%" PRIx64 ", id = %u, name=\"%.*s\", group=\"%.*s\")\n",
       thread_object_id, thread_serial, len(name), name.data(), len(group), group.data());
}

void TextWriter::thread_end(uint32_t thread_serial) { line("THREAD END (id = %u)\n", thread_serial); }

void TextWriter::monitor_wait(std::string_view signature, int64_t timeout_ms,
                              uint32_t thread_serial) {
  if (thread_serial == 0) {
    line("WAIT: MONITOR %.*s, timeout=%" PRId64 ", <unknown thread>\n", len(signature),
         signature.data(), timeout_ms);
  } else {
    line("WAIT: MONITOR %.*s, timeout=%" PRId64 ", thread %u\n", len(signature), signature.data(),
         timeout_ms, thread_serial);
  }
}

void TextWriter::monitor_waited(std::string_view signature, int64_t waited_ms,
                                uint32_t thread_serial) {
  if (thread_serial == 0) {
    line("WAITED: MONITOR %.*s, time_waited=%" PRId64 ", <unknown thread>\n", len(signature),
         signature.data(), waited_ms);
  } else {
    line("WAITED: MONITOR %.*s, time_waited=%" PRId64 ", thread %u\n", len(signature),
         signature.data(), waited_ms, thread_serial);
  }
}

void TextWriter::monitor_sleep(int64_t timeout_ms, uint32_t thread_serial) {
  if (thread_serial == 0) {
    line("SLEEP: timeout=%" PRId64 ", <unknown thread>\n", timeout_ms);
  } else {
    line("SLEEP: timeout=%" PRId64 ", thread %u\n", timeout_ms, thread_serial);
  }
}

void TextWriter::monitor_exit(std::string_view signature, uint32_t thread_serial) {
  if (thread_serial == 0) {
    line("EXIT: MONITOR %.*s, <unknown thread>\n", len(signature), signature.data());
  } else {
    line("EXIT: MONITOR %.*s, thread %u\n", len(signature), signature.data(), thread_serial);
  }
}

void TextWriter::trace_header(uint32_t trace_serial, uint32_t thread_serial,
                              std::string_view phase) {
  line("TRACE %u:", trace_serial);
  if (thread_serial != 0) line(" (thread=%u)", thread_serial);
  if (!phase.empty()) line(" (from %.*s phase of JVM)", len(phase), phase.data());
  raw("\n");
}

void TextWriter::trace_empty() { raw("\t<empty>\n"); }

void TextWriter::trace_frame(const TextFrame& frame) {
  std::string_view method = frame.method_name.empty() ? "<Unknown Method>" : frame.method_name;
  std::string_view source = frame.source_file.empty() ? "<Unknown Source>" : frame.source_file;
  char line_text[32];
  switch (frame.line) {
    case -2: std::snprintf(line_text, sizeof(line_text), "Compiled method"); break;
    case -3: std::snprintf(line_text, sizeof(line_text), "Native method"); break;
    default:
      if (frame.line < 0) {
        std::snprintf(line_text, sizeof(line_text), "Unknown line");
      } else {
        std::snprintf(line_text, sizeof(line_text), "%d", frame.line);
      }
  }
  line("\t%.*s.%.*s(%.*s:%s)\n", len(frame.class_name), frame.class_name.data(), len(method),
       method.data(), len(source), source.data(), line_text);
}

void TextWriter::heap_dump_begin(uint64_t objects, uint64_t bytes, time_t when) {
  std::string date = format_date_(when);
  line("HEAP DUMP BEGIN (%" PRIu64 " objects, %" PRIu64 " bytes) %.*s", objects, bytes, len(date),
       date.data());
}

void TextWriter::heap_dump_end() { raw("HEAP DUMP END\n"); }

void TextWriter::root_jni_global(uint64_t object_id, uint64_t reference_serial,
                                 uint32_t trace_serial) {
  line("ROOT %" PRIx64 " (kind=<JNI global ref>, id=%" PRIx64 ", trace=%u)\n", object_id,
       reference_serial, trace_serial);
}

void TextWriter::root_system_class(uint64_t object_id, std::string_view class_name) {
  line("ROOT %" PRIx64 " (kind=<system class>, name=%.*s)\n", object_id, len(class_name),
       class_name.data());
}

void TextWriter::root_monitor(uint64_t object_id) {
  line("ROOT %" PRIx64 " (kind=<busy monitor>)\n", object_id);
}

void TextWriter::root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial) {
  line("ROOT %" PRIx64 " (kind=<thread>, id=%u, trace=%u)\n", object_id, thread_serial,
       trace_serial);
}

void TextWriter::root_thread_block(uint64_t object_id, uint32_t thread_serial) {
  line("ROOT %" PRIx64 " (kind=<thread block>, thread=%u)\n", object_id, thread_serial);
}

void TextWriter::root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  line("ROOT %" PRIx64 " (kind=<Java stack>, thread=%u, frame=%d)\n", object_id, thread_serial,
       frame);
}

void TextWriter::root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  line("ROOT %" PRIx64 " (kind=<JNI local ref>, thread=%u, frame=%d)\n", object_id, thread_serial,
       frame);
}

void TextWriter::root_native_stack(uint64_t object_id, uint32_t thread_serial) {
  line("ROOT %" PRIx64 " (kind=<native stack>, thread=%u)\n", object_id, thread_serial);
}

void TextWriter::root_unknown(uint64_t object_id) {
  line("ROOT %" PRIx64 " (kind=<unknown>)\n", object_id);
}

void TextWriter::object(uint64_t object_id, uint64_t size, uint32_t trace_serial,
                        std::string_view class_name, uint64_t class_id) {
  line("OBJ %" PRIx64 " (sz=%" PRIu64 ", trace=%u, class=%.*s@%" PRIx64 ")\n", object_id, size,
       trace_serial, len(class_name), class_name.data(), class_id);
}

// Names shorter than 8 characters get a second tab, so that the IDs line up at a tab stop.
void TextWriter::object_field(std::string_view field_name, uint64_t value_id) {
  if (value_id == 0) return;
  line("\t%.*s\t%s%" PRIx64 "\n", len(field_name), field_name.data(),
       field_name.size() < 8 ? "\t" : "", value_id);
}

void TextWriter::object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial,
                              uint64_t length, std::string_view array_class_name,
                              uint64_t array_class_id) {
  line("ARR %" PRIx64 " (sz=%" PRIu64 ", trace=%u, nelems=%" PRIu64 ", elem type=%.*s@%" PRIx64
       ")\n",
       array_id, size, trace_serial, length, len(array_class_name), array_class_name.data(),
       array_class_id);
}

void TextWriter::array_element(uint64_t index, uint64_t value_id) {
  if (value_id == 0) return;
  line("\t[%" PRIu64 "]\t\t%" PRIx64 "\n", index, value_id);
}

void TextWriter::primitive_array(uint64_t array_id, uint64_t size, uint32_t trace_serial,
                                 uint64_t length, std::string_view array_type_name) {
  line("ARR %" PRIx64 " (sz=%" PRIu64 ", trace=%u, nelems=%" PRIu64 ", elem type=%.*s)\n", array_id,
       size, trace_serial, length, len(array_type_name), array_type_name.data());
}

void TextWriter::class_begin(uint64_t class_id, std::string_view class_name,
                             uint32_t trace_serial) {
  line("CLS %" PRIx64 " (name=%.*s, trace=%u)\n", class_id, len(class_name), class_name.data(),
       trace_serial);
}

void TextWriter::class_super(uint64_t super_id) {
  if (super_id != 0) line("\tsuper\t\t%" PRIx64 "\n", super_id);
}

void TextWriter::class_loader(uint64_t loader_id) {
  if (loader_id != 0) line("\tloader\t\t%" PRIx64 "\n", loader_id);
}

void TextWriter::class_signers(uint64_t signers_id) {
  if (signers_id != 0) line("\tsigners\t\t%" PRIx64 "\n", signers_id);
}

void TextWriter::class_domain(uint64_t protection_domain_id) {
  if (protection_domain_id != 0) line("\tdomain\t\t%" PRIx64 "\n", protection_domain_id);
}

void TextWriter::class_static(std::string_view field_name, uint64_t value_id) {
  if (value_id != 0) {
    line("\tstatic %.*s\t%" PRIx64 "\n", len(field_name), field_name.data(), value_id);
  }
}

void TextWriter::class_constant_pool(uint32_t index, uint64_t value_id) {
  if (value_id != 0) line("\tconstant pool entry %u\t%" PRIx64 "\n", index, value_id);
}

void TextWriter::sites_begin(std::string_view ordered_by, time_t when) {
  std::string date = format_date_(when);
  line("SITES BEGIN (ordered by %.*s) %.*s", len(ordered_by), ordered_by.data(), len(date),
       date.data());
  raw("          percent          live          alloc'ed  stack class\n"
      " rank   self  accum     bytes objs     bytes  objs trace name\n");
}

void TextWriter::sites_row(uint32_t rank, double self_percent, double accumulated_percent,
                           uint64_t live_bytes, uint64_t live_objects, uint64_t alloc_bytes,
                           uint64_t alloc_objects, uint32_t trace_serial,
                           std::string_view class_name) {
  line("%5u %5.2f%% %5.2f%% %9" PRIu64 " %4" PRIu64 " %9" PRIu64 " %5" PRIu64 " %5u %.*s\n", rank,
       self_percent, accumulated_percent, live_bytes, live_objects, alloc_bytes, alloc_objects,
       trace_serial, len(class_name), class_name.data());
}

void TextWriter::sites_end() { raw("SITES END\n"); }

void TextWriter::cpu_begin(CpuSection section, uint64_t total, size_t row_count, time_t when) {
  std::string date = format_date_(when);
  line("%s BEGIN (total = %" PRIu64 ") %.*s", cpu_section_name(section), total, len(date),
       date.data());
  if (row_count > 0) raw("rank   self  accum   count trace method\n");
}

void TextWriter::cpu_row(uint32_t rank, double self_percent, double accumulated_percent,
                         uint64_t count, uint32_t trace_serial, std::string_view class_name,
                         std::string_view method_name) {
  line("%4u %5.2f%% %5.2f%% %7" PRIu64 " %5u", rank, self_percent, accumulated_percent, count,
       trace_serial);
  if (class_name.empty()) {
    raw(" <empty trace>\n");
  } else {
    line(" %.*s.%.*s\n", len(class_name), class_name.data(), len(method_name), method_name.data());
  }
}

void TextWriter::cpu_end(CpuSection section) { line("%s END\n", cpu_section_name(section)); }

void TextWriter::old_prof_header() { raw("count callee caller time\n"); }

void TextWriter::old_prof_row(uint64_t calls, const OldProfMethod* callee,
                              const OldProfMethod* caller, uint64_t total_ms) {
  line("%" PRIu64 " ", calls);
  for (const auto& [method, unknown] : {std::pair{callee, "<unknown callee> "},
                                        std::pair{caller, "<unknown caller> "}}) {
    if (method == nullptr) {
      raw(unknown);
    } else {
      line("%.*s.%.*s%.*s ", len(method->class_name), method->class_name.data(),
           len(method->method_name), method->method_name.data(), len(method->signature),
           method->signature.data());
    }
  }
  line("%" PRIu64 "\n", total_ms);
}

void TextWriter::monitor_time_begin(uint64_t total_ms, time_t when, bool rows) {
  std::string date = format_date_(when);
  line("MONITOR TIME BEGIN (total = %" PRIu64 " ms) %.*s", total_ms, len(date), date.data());
  if (total_ms > 0 || rows) raw("rank   self  accum   count trace monitor\n");
}

void TextWriter::monitor_time_row(uint32_t rank, double self_percent, double accumulated_percent,
                                  uint64_t count, uint32_t trace_serial,
                                  std::string_view class_name) {
  line("%4u %5.2f%% %5.2f%% %7" PRIu64 " %5u %.*s (Java)\n", rank, self_percent,
       accumulated_percent, count, trace_serial, len(class_name), class_name.data());
}

void TextWriter::monitor_time_end() { raw("MONITOR TIME END\n"); }

void TextWriter::monitor_dump_begin() { raw("MONITOR DUMP BEGIN\n"); }

void TextWriter::monitor_dump_note(std::string_view note) {
  line("    (%.*s)\n", len(note), note.data());
}

void TextWriter::monitor_dump_thread(uint32_t thread_serial, uint32_t trace_serial,
                                     uint32_t jvmti_state) {
  std::string status = thread_status_text(jvmti_state);
  line("    THREAD %u, trace %u, status: %s\n", thread_serial, trace_serial, status.c_str());
}

// " thread N" items separated by commas, the last without one.
void TextWriter::thread_list(std::string_view label, std::span<const uint32_t> serials) {
  line("\t%.*s:", len(label), label.data());
  for (size_t i = 0; i < serials.size(); ++i) {
    const char* separator = i + 1 < serials.size() ? "," : "";
    if (serials[i] == 0) {
      line(" <unknown thread>%s", separator);
    } else {
      line(" thread %u%s", serials[i], separator);
    }
  }
  raw("\n");
}

void TextWriter::monitor_dump_monitor(std::string_view signature, uint32_t owner_serial,
                                      uint32_t entry_count,
                                      std::span<const uint32_t> waiting_to_enter,
                                      std::span<const uint32_t> waiting_to_be_notified) {
  if (owner_serial != 0) {
    line("    MONITOR %.*s\n", len(signature), signature.data());
    line("\towner: thread %u, entry count: %u\n", owner_serial, entry_count);
  } else {
    line("    MONITOR %.*s unowned\n", len(signature), signature.data());
  }
  thread_list("waiting to enter", waiting_to_enter);
  thread_list("waiting to be notified", waiting_to_be_notified);
}

void TextWriter::monitor_dump_end() { raw("MONITOR DUMP END\n"); }

}  // namespace fasthprof
