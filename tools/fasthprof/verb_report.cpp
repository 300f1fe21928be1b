// `fasthprof report FILE -o DIR`: one self-contained HTML page of a heap dump (no script, nothing
// fetched): the overview, the leak suspects with their paths, the top objects and classes by
// retained size and the class histogram, for a browser on a machine without the analysis tools.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "heap_names.h"
#include "heap_suspects.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kReportUsage[] =
    "usage: fasthprof report [--dump N] [--share PERCENT] [--top N] [--weak]\n"
    "                        [--compressed] -o DIR FILE\n"
    "Writes DIR/index.html (DIR is made if it does not exist): one self-contained\n"
    "page about a heap dump, with no script and nothing fetched from elsewhere:\n"
    "  - the overview: objects, references, roots by kind, what the roots retain;\n"
    "  - the leak suspects of `fasthprof leaks` with their accumulation points,\n"
    "    what those hold, and the path from a GC root to each;\n"
    "  - the top objects and classes by retained size (`fasthprof dominators`);\n"
    "  - the class histogram by shallow size (`fasthprof summary`).\n"
    "Each table's bar is the row's share of the retained heap (of the heap's\n"
    "shallow bytes for the histogram).\n"
    "\n"
    FASTHPROF_DUMP_HELP
    "  --share PERCENT  what makes a leak suspect (default 10; see leaks --help)\n"
    "  --top N   rows of each table (default 30)\n"
    "  --weak    follow Reference.referent like any other field\n"
    "  --compressed  shallow sizes of a JVM with compressed references\n"
    "  -o DIR    the folder the page goes in (required)\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done, 2 bad usage, bad input or a page that cannot be written\n"
    "(one message on stderr).\n";

namespace {

constexpr char kStyle[] =
    "body{font:14px/1.4 sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:17px;margin-top:28px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}"
    "td.name,th.name{text-align:left;font-family:monospace}.bar{background:#4a7fb5;height:10px;min-width:1px}"
    ".suspect{border:1px solid #d9a;background:#fff8f8;padding:8px 12px;margin:12px 0}"
    ".path{font-family:monospace;white-space:pre-wrap}.muted{color:#777}";

struct Page {
  std::string html;
  void add(const std::string& text) { html += text; }
  void row(const std::vector<std::string>& cells, const std::string& name, double share) {
    html += "<tr>";
    for (const std::string& cell : cells) html += "<td>" + cell + "</td>";
    char bar[96];
    std::snprintf(bar, sizeof bar, "<td><div class=\"bar\" style=\"width:%.1fpx\"></div></td>", 2.0 * share);
    html += bar;
    html += "<td class=\"name\">" + html_text(name) + "</td></tr>\n";
  }
  void header(const std::vector<const char*>& columns) {
    html += "<table><tr>";
    for (const char* column : columns) html += std::string("<th>") + column + "</th>";
    html += "<th></th><th class=\"name\">name</th></tr>\n";
  }
};

std::string number(uint64_t value) { return std::to_string(value); }

std::string percent_text(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", share);
  return text;
}

void overview(Page* page, const std::string& path, size_t dump, size_t dumps, const HeapGraph& graph,
              const Dominators& dominators, const RetainedSizes& sizes, bool weak) {
  page->add("<h1>Heap dump " + std::to_string(dump + 1) + " of " + std::to_string(dumps) + ": " + html_text(path) +
            "</h1>\n<table id=\"overview\">\n");
  auto fact = [page](const char* name, const std::string& value) {
    page->add(std::string("<tr><th class=\"name\">") + name + "</th><td class=\"name\">" + value + "</td></tr>\n");
  };
  fact("objects", number(graph.nodes() - 1));
  fact("reachable from the roots", number(dominators.reachable() - 1));
  fact("references", number(graph.references()) + " (" + number(graph.dangling()) + " to no object of the dump)");
  std::map<std::string, uint64_t> kinds;
  for (const GraphRoot& root : graph.roots()) {
    const char* name = heap_tag_name(root.tag);
    ++kinds[name != nullptr ? name : "ROOT"];
  }
  std::string roots;
  for (const auto& [name, count] : kinds) roots += (roots.empty() ? "" : ", ") + name + " " + number(count);
  fact("GC roots", html_text(roots));
  fact("retained by the roots", number(sizes.total()) + " bytes");
  fact("weak, soft, final and phantom referents", weak ? "followed" : "not followed");
  page->add("</table>\n");
}

void suspects_section(Page* page, const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                      const std::vector<Suspect>& suspects, double share) {
  page->add("<h2 id=\"suspects\">Leak suspects</h2>\n<p class=\"muted\">Objects right below the GC roots that "
            "retain " + percent_text(share) + " of the heap or more, and classes whose such instances do "
            "together.</p>\n");
  if (suspects.empty()) page->add("<p class=\"none\">No suspect: nothing retains " + percent_text(share) + ".</p>\n");
  int rank = 0;
  for (const Suspect& s : suspects) {
    const std::string what = s.by_class ? number(s.instances) + " instances of " + s.what : s.what;
    page->add("<div class=\"suspect\"><b>Suspect " + std::to_string(++rank) + ":</b> " + html_text(what) +
              " retains " + number(s.retained) + " bytes (" + percent_text(percent_of(s.retained, sizes.total())) +
              ").<br>Accumulated in <code>" + html_text(object_label(graph, dominators.node(s.accumulation))) +
              "</code>, " + number(sizes.retained_pre(s.accumulation)) + " bytes, holding:\n");
    page->header({"objects", "retained"});
    for (const Held& held : s.holds) {
      page->row({number(held.objects), number(held.retained)}, held.class_name, percent_of(held.retained, sizes.total()));
    }
    page->add("</table>Kept alive by:<div class=\"path\">");
    for (const PathStep& step : s.path) {
      page->add(html_text(step.via) + "  &rarr;  " + html_text(object_label(graph, step.node)) + "\n");
    }
    page->add("</div></div>\n");
  }
}

void retained_sections(Page* page, const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                       uint64_t top) {
  page->add("<h2 id=\"objects\">Top objects by retained size</h2>\n");
  page->header({"retained", "shallow"});
  for (uint32_t pre : sizes.top(top)) {
    const uint32_t node = dominators.node(pre);
    page->row({number(sizes.retained_pre(pre)), number(graph.shallow_bytes(node))}, object_label(graph, node),
              percent_of(sizes.retained_pre(pre), sizes.total()));
  }
  page->add("</table>\n<h2 id=\"classes\">Top classes by retained size</h2>\n<p class=\"muted\">A class's retained "
            "size counts its instances that no instance of the same class dominates.</p>\n");
  page->header({"retained", "shallow", "count"});
  size_t shown = 0;
  for (const ClassRetained& row : sizes.classes()) {
    if (shown++ == top) break;
    page->row({number(row.retained), number(row.shallow), number(row.count)}, sizes.class_name(graph, row),
              percent_of(row.retained, sizes.total()));
  }
  page->add("</table>\n");
}

void histogram_section(Page* page, const HeapDumpInfo& dump, uint64_t top) {
  std::vector<const HistogramRow*> rows;
  uint64_t total = 0;
  for (const HistogramRow& row : dump.histogram) {
    rows.push_back(&row);
    total += row.bytes;
  }
  std::sort(rows.begin(), rows.end(), [](const HistogramRow* a, const HistogramRow* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->name < b->name;
  });
  page->add("<h2 id=\"histogram\">Class histogram</h2>\n<p class=\"muted\">Shallow bytes and instances of every "
            "class, reachable or not: " + number(total) + " bytes in all.</p>\n");
  page->header({"bytes", "instances"});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    page->row({number(rows[i]->bytes), number(rows[i]->instances)}, rows[i]->name, percent_of(rows[i]->bytes, total));
  }
  page->add("</table>\n");
}

// DIR made when missing (its parent must exist); false after a message.
bool make_folder(const char* dir) {
  if (mkdir(dir, 0755) == 0 || errno == EEXIST) {
    struct stat info {};
    if (stat(dir, &info) == 0 && S_ISDIR(info.st_mode)) return true;
    return fail("report", "%s exists and is not a folder", dir), false;
  }
  return fail("report", "cannot make the folder %s: %s", dir, std::strerror(errno)), false;
}

}  // namespace

int report_main(int argc, char** argv) {
  Args args;
  if (!parse_args("report", argc, argv, {"--weak", "--compressed"}, {"--share", "--top", kDumpOption, kMaxExpandedOption},
                  &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kReportUsage, stdout);
    return kExitOk;
  }
  uint64_t top = 30;
  if (args.has("--top") && (!parse_count(args.value("--top"), &top) || top == 0)) {
    return fail("report", "--top takes a count of 1 or more");
  }
  double share = 10;
  if (args.has("--share") && !parse_share("report", args.value("--share"), &share)) return kExitBadInput;
  if (args.operands.size() != 1) return fail("report", "needs one FILE (see fasthprof report --help)");
  if (args.output == nullptr) return fail("report", "needs -o DIR, the folder the page goes in");
  const std::string path(args.operands[0]);
  HeapAnalysis analysis;
  std::unique_ptr<Loaded> loaded = load_for_graph("report", path.c_str(), args, &analysis.graph);
  if (loaded == nullptr) return kExitBadInput;
  size_t dump = 0;
  if (!choose_dump("report", args, loaded->model, &dump)) return kExitBadInput;
  const bool weak = args.has("--weak");
  if (!analyse("report", path, loaded->model, dump, HeapGraphOptions{weak, args.has("--compressed")}, &analysis)) {
    return kExitBadInput;
  }
  const HeapGraph& graph = analysis.graph;
  const Dominators& dominators = analysis.dominators;
  const RetainedSizes& sizes = analysis.sizes;
  const std::vector<Suspect> suspects = find_suspects(graph, dominators, sizes, share, 5);

  Page page;
  page.add("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fasthprof report: " + html_text(path) +
           "</title>\n<style>" + kStyle + "</style></head><body>\n");
  overview(&page, path, dump, loaded->model.dumps().size(), graph, dominators, sizes, weak);
  suspects_section(&page, graph, dominators, sizes, suspects, share);
  retained_sections(&page, graph, dominators, sizes, top);
  histogram_section(&page, loaded->model.dumps()[dump], top);
  page.add("<p class=\"muted\">Written by fasthprof report; the same figures as text: fasthprof leaks, "
           "dominators, summary.</p>\n</body></html>\n");
  if (!make_folder(args.output)) return kExitBadInput;
  const std::string file = std::string(args.output) + "/index.html";
  Output output;
  if (!output.open("report", file.c_str())) return kExitBadInput;
  std::fwrite(page.html.data(), 1, page.html.size(), output.file());
  if (!output.close("report")) return kExitBadInput;
  std::fprintf(stderr, "fasthprof report: %s written (%zu bytes)\n", file.c_str(), page.html.size());
  return kExitOk;
}

}  // namespace fasthprof::cli
