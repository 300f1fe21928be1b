// `fasthprof summary FILE`: what a file holds, per report.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>
#include <numeric>

#include "base/hprof_format.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kSummaryUsage[] =
    "usage: fasthprof summary [--top N] [--by method] [--json] [-o OUT] FILE\n"
    "Prints what an HPROF binary file holds: its header, its records per tag, and per\n"
    "report:\n"
    "  - each heap dump: its counts, and a class histogram like `jmap -histo`:\n"
    "    instances and shallow bytes per class, the top N by bytes;\n"
    "  - each ALLOC SITES section (heap=sites): the top N sites ranked as the agent\n"
    "    ranks them (live bytes, or allocated bytes when the section says so), with\n"
    "    the top frame of each trace;\n"
    "  - each CPU SAMPLES section (cpu=samples; CPU TIME (ms) for cpu=times): the top\n"
    "    N traces by count, with their top frame.\n"
    "Reads fasthprof's files (format=b, gz=y) and the JDK's dumps (jcmd\n"
    "GC.heap_dump, -gz too).\n"
    "A text file (format=a; cpu=old): its CPU SAMPLES, CPU TIME and MONITOR TIME\n"
    "sections as written (--by method: per method, MONITOR TIME per monitor class),\n"
    "each MONITOR DUMP's thread states, blocked threads and monitors, the cpu=old\n"
    "table's top pairs by calls.\n"
    "\n"
    "Instances: every INSTANCE DUMP and array of a class; java.lang.Class is counted\n"
    "from the CLASS DUMPs (one per loaded class), plus any INSTANCE DUMP of it (the\n"
    "JDK's primitive mirrors).\n"
    "Shallow bytes: HPROF stores no object sizes, so they are computed from what the\n"
    "dump holds, the rule VisualVM's heap library follows: a header of two\n"
    "identifiers (the file's identifier size: 16 bytes in 8-byte files), plus the\n"
    "instance's field values as dumped (references at the identifier size), or for\n"
    "an array a 4-byte length plus its elements; the sum rounded up to 8.\n"
    "A JVM with compressed references and class pointers uses less: the figures rank\n"
    "classes, they are not the JVM's own bytes (jcmd GC.class_histogram prints\n"
    "those).\n"
    "\n"
    "  --top N   rows per histogram and section (default 25; 0: all)\n"
    "  --by method  CPU sections ranked per method at the top of the stack (the\n"
    "            traces that end in one method added up) instead of per trace\n"
    "  --json    the same as one JSON object: file, format (binary: version, id_size,\n"
    "            timestamp_ms, gzip, records, heap_dumps with their histogram, sites,\n"
    "            cpu; text: sections, monitor_dumps, cpu_old), each list of rows cut\n"
    "            at --top as the text is\n"
    "  -o OUT    write to OUT instead of standard output\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done, 2 bad usage or bad input (one message on stderr).\n";

namespace {

double percent(uint64_t part, uint64_t whole) { return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole); }

void print_trace_top(FILE* out, const HprofModel& model, uint32_t trace_serial) {
  const TraceInfo* trace = model.trace(trace_serial);
  if (trace == nullptr) {
    std::fputs(" <no such trace>\n", out);
  } else if (trace->frame_count == 0) {
    std::fputs(" <empty trace>\n", out);
  } else {
    std::fprintf(out, " %s\n", model.frame_name(model.trace_frame(*trace, 0), true).c_str());
  }
}

void print_dumps(FILE* out, const HprofModel& model, uint64_t top) {
  const auto& dumps = model.dumps();
  std::fprintf(out, "heap dumps: %zu\n", dumps.size());
  for (size_t i = 0; i < dumps.size(); ++i) {
    const HeapDumpInfo& dump = dumps[i];
    std::fprintf(out,
                 "\nHEAP DUMP %zu at byte %" PRIu64 ": %" PRIu64 " segments, %" PRIu64 " classes, %" PRIu64
                 " instances, %" PRIu64 " object arrays, %" PRIu64 " primitive arrays, %" PRIu64 " roots\n",
                 i + 1, dump.offset, dump.segments, dump.classes, dump.instances, dump.object_arrays,
                 dump.primitive_arrays, dump.roots);
    uint64_t objects = 0;
    for (const HistogramRow& row : dump.histogram) objects += row.instances;
    const size_t shown = top == 0 ? dump.histogram.size() : std::min<size_t>(top, dump.histogram.size());
    std::fprintf(out, "class histogram: %zu classes, %" PRIu64 " objects, %" PRIu64 " shallow bytes; top %zu by bytes\n",
                 dump.histogram.size(), objects, dump.total_bytes, shown);
    std::fprintf(out, " rank   bytes%%      instances            bytes  class name\n");
    for (size_t r = 0; r < shown; ++r) {
      const HistogramRow& row = dump.histogram[r];
      std::fprintf(out, "%5zu %6.2f%% %14" PRIu64 " %16" PRIu64 "  %s\n", r + 1, percent(row.bytes, dump.total_bytes),
                   row.instances, row.bytes, row.name.c_str());
    }
  }
}

void print_sites(FILE* out, const HprofModel& model, uint64_t top) {
  for (size_t i = 0; i < model.sites().size(); ++i) {
    const SitesSection& section = model.sites()[i];
    const bool by_alloc = (section.flags & 2) != 0;
    std::vector<const SiteRow*> rows;
    for (const SiteRow& row : section.rows) rows.push_back(&row);
    // The agent's order (ALLOC SITES rows are written ranked); kept stable for files of other writers.
    std::stable_sort(rows.begin(), rows.end(), [by_alloc](const SiteRow* a, const SiteRow* b) {
      return by_alloc ? a->alloc_bytes > b->alloc_bytes : a->live_bytes > b->live_bytes;
    });
    const uint64_t total = by_alloc ? section.total_alloc_bytes : section.total_live_bytes;
    const size_t shown = top == 0 ? rows.size() : std::min<size_t>(top, rows.size());
    std::fprintf(out,
                 "\nSITES %zu at byte %" PRIu64 " (ordered by %s): %zu sites, live %" PRIu32 " bytes %" PRIu32
                 " objects, allocated %" PRIu64 " bytes %" PRIu64 " objects; top %zu\n",
                 i + 1, section.offset, by_alloc ? "allocated bytes" : "live bytes", rows.size(),
                 section.total_live_bytes, section.total_live_instances, section.total_alloc_bytes,
                 section.total_alloc_instances, shown);
    std::fputs("          percent          live          alloc'ed  stack class\n"
               " rank   self  accum     bytes objs     bytes  objs trace name (top frame)\n",
               out);
    uint64_t accumulated = 0;
    for (size_t r = 0; r < shown; ++r) {
      const SiteRow& row = *rows[r];
      const uint64_t value = by_alloc ? row.alloc_bytes : row.live_bytes;
      accumulated += value;
      std::fprintf(out, "%5zu %5.2f%% %5.2f%% %9" PRIu32 " %4" PRIu32 " %9" PRIu32 " %5" PRIu32 " %5" PRIu32 " %s", r + 1,
                   percent(value, total), percent(accumulated, total), row.live_bytes, row.live_instances,
                   row.alloc_bytes, row.alloc_instances, row.trace_serial, model.site_class_name(row).c_str());
      print_trace_top(out, model, row.trace_serial);
    }
  }
}

// --by method: each section's counts per method at the top of the stack, ranked.
void print_cpu_by_method(FILE* out, const HprofModel& model, uint64_t top) {
  const char* title = model.cpu_is_times() ? "CPU TIME (ms)" : "CPU SAMPLES";
  for (size_t i = 0; i < model.cpu().size(); ++i) {
    const CpuSamplesSection& section = model.cpu()[i];
    std::map<std::string, uint64_t> by_method;
    for (const CpuRow& row : section.rows) {
      const TraceInfo* trace = model.trace(row.trace_serial);
      std::string name = trace == nullptr          ? "<no such trace>"
                         : trace->frame_count == 0 ? "<empty trace>"
                                                   : model.frame_name(model.trace_frame(*trace, 0), false);
      by_method[name] += row.count;
    }
    std::vector<std::pair<std::string, uint64_t>> rows(by_method.begin(), by_method.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    const size_t shown = top == 0 ? rows.size() : std::min<size_t>(top, rows.size());
    std::fprintf(out, "\n%s %zu at byte %" PRIu64 " (total = %" PRIu32 "): %zu methods; top %zu\n", title, i + 1,
                 section.offset, section.total, rows.size(), shown);
    std::fputs("rank   self  accum   count method\n", out);
    uint64_t accumulated = 0;
    for (size_t r = 0; r < shown; ++r) {
      accumulated += rows[r].second;
      std::fprintf(out, "%4zu %5.2f%% %5.2f%% %7" PRIu64 " %s\n", r + 1, percent(rows[r].second, section.total),
                   percent(accumulated, section.total), rows[r].second, rows[r].first.c_str());
    }
  }
}

void print_cpu(FILE* out, const HprofModel& model, uint64_t top) {
  const char* title = model.cpu_is_times() ? "CPU TIME (ms)" : "CPU SAMPLES";
  for (size_t i = 0; i < model.cpu().size(); ++i) {
    const CpuSamplesSection& section = model.cpu()[i];
    std::vector<CpuRow> rows = section.rows;
    std::stable_sort(rows.begin(), rows.end(), [](const CpuRow& a, const CpuRow& b) { return a.count > b.count; });
    const size_t shown = top == 0 ? rows.size() : std::min<size_t>(top, rows.size());
    std::fprintf(out, "\n%s %zu at byte %" PRIu64 " (total = %" PRIu32 "): %zu traces; top %zu\n", title, i + 1,
                 section.offset, section.total, rows.size(), shown);
    std::fputs("rank   self  accum   count trace method\n", out);
    uint64_t accumulated = 0;
    for (size_t r = 0; r < shown; ++r) {
      accumulated += rows[r].count;
      std::fprintf(out, "%4zu %5.2f%% %5.2f%% %7" PRIu32 " %5" PRIu32, r + 1, percent(rows[r].count, section.total),
                   percent(accumulated, section.total), rows[r].count, rows[r].trace_serial);
      print_trace_top(out, model, rows[r].trace_serial);
    }
  }
}

}  // namespace

int summary_main(int argc, char** argv) {
  Args args;
  if (!parse_args("summary", argc, argv, {"--json"}, {"--top", "--by", kMaxExpandedOption}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kSummaryUsage, stdout);
    return kExitOk;
  }
  uint64_t top = 25;
  if (args.has("--top") && !parse_count(args.value("--top"), &top)) {
    return fail("summary", "--top takes a count, not \"%.*s\"", static_cast<int>(args.value("--top").size()),
                args.value("--top").data());
  }
  if (args.has("--by") && args.value("--by") != "method") return fail("summary", "--by takes `method`");
  if (args.operands.size() != 1) return fail("summary", "needs one FILE (see fasthprof summary --help)");
  const std::string path(args.operands[0]);
  std::unique_ptr<Loaded> loaded = load("summary", path.c_str(), args, true);
  if (loaded == nullptr) return kExitBadInput;
  Output output;
  if (!output.open("summary", args.output)) return kExitBadInput;
  FILE* out = output.file();
  if (args.has("--json")) {
    print_summary_json(out, path.c_str(), *loaded, top, args.has("--by"));
    return output.close("summary") ? kExitOk : kExitBadInput;
  }
  if (loaded->text) {
    print_text_summary(out, path.c_str(), loaded->text_profile, top, args.has("--by"));
    return output.close("summary") ? kExitOk : kExitBadInput;
  }
  const HprofModel& model = loaded->model;
  std::fprintf(out, "%s: %.*s, identifier size %" PRIu32 ", time stamp %" PRIu64 " ms\n", path.c_str(),
               static_cast<int>(model.header().version.size()), model.header().version.data(), model.header().id_size,
               model.header().timestamp_millis);
  if (loaded->input.compressed()) {
    std::fprintf(out, "gzip: %" PRIu64 " members, %" PRIu64 " bytes stored, %" PRIu64 " bytes of HPROF\n",
                 loaded->input.members(), loaded->input.stored_size(), loaded->input.size());
  }
  std::fprintf(out, "records: %" PRIu64 "\n", model.records());
  for (size_t tag = 0; tag < model.record_counts().size(); ++tag) {
    if (model.record_counts()[tag]) {
      const char* name = record_tag_name(static_cast<uint8_t>(tag));
      std::fprintf(out, "  %-20s %12" PRIu64 "\n", name != nullptr ? name : "(unknown tag)", model.record_counts()[tag]);
    }
  }
  std::fprintf(out, "reports: %zu heap dumps, %zu SITES, %zu CPU sections\n", model.dumps().size(), model.sites().size(),
               model.cpu().size());
  print_dumps(out, model, top);
  print_sites(out, model, top);
  if (args.has("--by")) {
    print_cpu_by_method(out, model, top);
  } else {
    print_cpu(out, model, top);
  }
  return output.close("summary") ? kExitOk : kExitBadInput;
}

}  // namespace fasthprof::cli
