// `fasthprof summary --json`: what summary prints, as one JSON object (the same rows, --top and
// --by method included).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/hprof_format.h"
#include "json_writer.h"
#include "verbs.h"

namespace fasthprof::cli {

namespace {

size_t shown_of(uint64_t top, size_t size) { return top == 0 ? size : std::min<size_t>(top, size); }

std::string top_frame(const HprofModel& model, uint32_t serial) {
  const TraceInfo* trace = model.trace(serial);
  if (trace == nullptr) return "<no such trace>";
  if (trace->frame_count == 0) return "<empty trace>";
  return model.frame_name(model.trace_frame(*trace, 0), true);
}

void dumps_json(JsonWriter& json, const HprofModel& model, uint64_t top) {
  json.key("heap_dumps");
  json.begin_array();
  for (const HeapDumpInfo& dump : model.dumps()) {
    json.begin_object();
    json.field("offset", dump.offset);
    json.field("segments", dump.segments);
    json.field("complete", dump.complete);
    json.field("classes", dump.classes);
    json.field("instances", dump.instances);
    json.field("object_arrays", dump.object_arrays);
    json.field("primitive_arrays", dump.primitive_arrays);
    json.field("roots", dump.roots);
    json.field("shallow_bytes", dump.total_bytes);
    json.key("histogram");
    json.begin_array();
    for (size_t r = 0; r < shown_of(top, dump.histogram.size()); ++r) {
      json.begin_object();
      json.field("name", dump.histogram[r].name);
      json.field("instances", dump.histogram[r].instances);
      json.field("bytes", dump.histogram[r].bytes);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
}

void sites_json(JsonWriter& json, const HprofModel& model, uint64_t top) {
  json.key("sites");
  json.begin_array();
  for (const SitesSection& section : model.sites()) {
    const bool by_alloc = (section.flags & 2) != 0;
    std::vector<const SiteRow*> rows;
    for (const SiteRow& row : section.rows) rows.push_back(&row);
    std::stable_sort(rows.begin(), rows.end(), [by_alloc](const SiteRow* a, const SiteRow* b) {
      return by_alloc ? a->alloc_bytes > b->alloc_bytes : a->live_bytes > b->live_bytes;
    });
    json.begin_object();
    json.field("offset", section.offset);
    json.field("ordered_by", by_alloc ? "alloc-bytes" : "live-bytes");
    json.field("sites", static_cast<uint64_t>(rows.size()));
    json.field("live_bytes", uint64_t{section.total_live_bytes});
    json.field("live_objects", uint64_t{section.total_live_instances});
    json.field("alloc_bytes", section.total_alloc_bytes);
    json.field("alloc_objects", section.total_alloc_instances);
    json.key("rows");
    json.begin_array();
    for (size_t r = 0; r < shown_of(top, rows.size()); ++r) {
      json.begin_object();
      json.field("live_bytes", uint64_t{rows[r]->live_bytes});
      json.field("live_objects", uint64_t{rows[r]->live_instances});
      json.field("alloc_bytes", uint64_t{rows[r]->alloc_bytes});
      json.field("alloc_objects", uint64_t{rows[r]->alloc_instances});
      json.field("trace", uint64_t{rows[r]->trace_serial});
      json.field("class", model.site_class_name(*rows[r]));
      json.field("top_frame", top_frame(model, rows[r]->trace_serial));
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
}

void cpu_json(JsonWriter& json, const HprofModel& model, uint64_t top, bool by_method) {
  json.key("cpu");
  json.begin_array();
  for (const CpuSamplesSection& section : model.cpu()) {
    // (name, count, trace): per trace, or per method with trace 0.
    std::vector<std::tuple<std::string, uint64_t, uint32_t>> rows;
    if (by_method) {
      std::map<std::string, uint64_t> counts;
      for (const CpuRow& row : section.rows) {
        const TraceInfo* trace = model.trace(row.trace_serial);
        counts[trace == nullptr || trace->frame_count == 0 ? std::string("<empty trace>")
                                                           : model.frame_name(model.trace_frame(*trace, 0), false)] +=
            row.count;
      }
      for (const auto& [name, count] : counts) rows.emplace_back(name, count, 0);
    } else {
      for (const CpuRow& row : section.rows) rows.emplace_back(top_frame(model, row.trace_serial), row.count, row.trace_serial);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return std::get<1>(a) > std::get<1>(b); });
    json.begin_object();
    json.field("title", model.cpu_is_times() ? "CPU TIME (ms)" : "CPU SAMPLES");
    json.field("offset", section.offset);
    json.field("total", uint64_t{section.total});
    json.key("rows");
    json.begin_array();
    for (size_t r = 0; r < shown_of(top, rows.size()); ++r) {
      json.begin_object();
      json.field(by_method ? "method" : "top_frame", std::get<0>(rows[r]));
      json.field("count", std::get<1>(rows[r]));
      if (!by_method) json.field("trace", uint64_t{std::get<2>(rows[r])});
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
}

void binary_json(JsonWriter& json, const Loaded& loaded, uint64_t top, bool by_method) {
  const HprofModel& model = loaded.model;
  json.field("format", "binary");
  json.field("version", model.header().version);
  json.field("id_size", uint64_t{model.header().id_size});
  json.field("timestamp_ms", model.header().timestamp_millis);
  json.field("gzip", loaded.input.compressed());
  json.field("records_total", model.records());
  json.key("records");
  json.begin_object();
  for (size_t tag = 0; tag < model.record_counts().size(); ++tag) {
    if (model.record_counts()[tag] == 0) continue;
    const char* name = record_tag_name(static_cast<uint8_t>(tag));
    json.field(name != nullptr ? std::string(name) : "tag " + std::to_string(tag), model.record_counts()[tag]);
  }
  json.end_object();
  dumps_json(json, model, top);
  sites_json(json, model, top);
  cpu_json(json, model, top, by_method);
}

const char* text_title(TextSectionKind kind) {
  return kind == TextSectionKind::kCpuSamples ? "CPU SAMPLES"
         : kind == TextSectionKind::kCpuTime  ? "CPU TIME (ms)"
                                              : "MONITOR TIME";
}

void threads_json(JsonWriter& json, const TextProfile& text, const std::vector<uint32_t>& threads) {
  json.begin_array();
  for (uint32_t serial : threads) {
    json.begin_object();
    json.field("thread", uint64_t{serial});
    json.field("name", text.thread_name(serial));
    json.end_object();
  }
  json.end_array();
}

void monitor_dumps_json(JsonWriter& json, const TextProfile& text) {
  json.key("monitor_dumps");
  json.begin_array();
  for (const MonitorDump& dump : text.monitor_dumps()) {
    json.begin_object();
    json.field("line", dump.line);
    json.field("note", dump.note);
    json.key("threads");
    json.begin_array();
    for (const MonitorDumpThread& thread : dump.threads) {
      json.begin_object();
      json.field("thread", uint64_t{thread.thread_serial});
      json.field("name", text.thread_name(thread.thread_serial));
      json.field("status", thread.status);
      json.field("trace", uint64_t{thread.trace_serial});
      json.field("top_frame", text.top_frame(thread.trace_serial));
      json.end_object();
    }
    json.end_array();
    json.key("monitors");
    json.begin_array();
    for (const MonitorDumpMonitor& monitor : dump.monitors) {
      json.begin_object();
      json.field("name", monitor.name);
      json.field("owned", monitor.owned);
      if (monitor.owned) {
        json.field("owner", uint64_t{monitor.owner});
        json.field("owner_name", text.thread_name(monitor.owner));
        json.field("entry_count", monitor.entry_count);
      }
      json.key("waiting_to_enter");
      threads_json(json, text, monitor.entering);
      json.key("waiting_to_be_notified");
      threads_json(json, text, monitor.notified);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
}

void text_json(JsonWriter& json, const TextProfile& text, uint64_t top) {
  json.field("format", "text");
  json.key("sections");
  json.begin_array();
  for (const TextRankedSection& section : text.sections()) {
    json.begin_object();
    json.field("title", text_title(section.kind));
    json.field("line", section.line);
    json.field("total", section.total);
    json.key("rows");
    json.begin_array();
    for (size_t r = 0; r < shown_of(top, section.rows.size()); ++r) {
      const TextRankedRow& row = section.rows[r];
      json.begin_object();
      json.field("self_percent", row.self_hundredths / 100.0);
      json.field("count", row.count);
      json.field("trace", uint64_t{row.trace_serial});
      json.field("name", row.name);
      json.field("top_frame", text.top_frame(row.trace_serial));
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
  monitor_dumps_json(json, text);
  json.key("cpu_old");
  json.begin_array();
  for (size_t r = 0; r < shown_of(top, text.old_rows().size()); ++r) {
    const TextOldRow& row = text.old_rows()[r];
    json.begin_object();
    json.field("calls", row.count);
    json.field("callee", row.callee);
    json.field("caller", row.caller);
    json.field("ms", row.millis);
    json.end_object();
  }
  json.end_array();
}

}  // namespace

void print_summary_json(FILE* out, const char* path, const Loaded& loaded, uint64_t top, bool by_method) {
  JsonWriter json(out);
  json.begin_object();
  json.field("file", path);
  if (loaded.text) {
    text_json(json, loaded.text_profile, top);
  } else {
    binary_json(json, loaded, top, by_method);
  }
  json.end_object();
  json.finish();
}

}  // namespace fasthprof::cli
