// `fasthprof flame FILE -o out.html`: a flame graph (CPU) or an icicle (allocation sites) in one
// self-contained HTML page: the data, style and script inline, nothing fetched.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <unordered_set>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "flame_page.h"
#include "profile.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kFlameUsage[] =
    "usage: fasthprof flame [--cpu | --sites [--value METRIC] | --monitor]\n"
    "                       [--no-threads] [--section N] [--title TEXT] [--depth N]\n"
    "                       -o OUT.html FILE\n"
    "Writes a flame graph as one self-contained HTML page (data, style and script\n"
    "inline; it fetches nothing): the stacks of `fasthprof collapsed` (same data),\n"
    "each frame as wide as its count. CPU sections and MONITOR TIME draw as a flame\n"
    "graph (callers at the bottom, the root in view); SITES as an icicle (callers at\n"
    "the top, the allocated class as the innermost frame).\n"
    "Frames are coloured by kind, named in a legend: Java code of the program, JDK\n"
    "classes (java., javax., jdk., sun., com.sun.), native methods, the allocated or\n"
    "monitor class, thread roots, and \"(truncated at depth N)\": the root of stacks as\n"
    "deep as the file's depth= (binary files; --depth N for a text file, whose\n"
    "layout does not record it), whose outer frames may be cut.\n"
    "When the traces name threads (thread=y) each thread is a root of its own.\n"
    "In the page: hover a frame for its name, count and percentage; click it to zoom;\n"
    "type in the search box to highlight the frames whose name contains the text (the\n"
    "matched share is shown); Callers turns the graph over (each method's own count\n"
    "at the root, its callers above it), Callees back; Reset (or Escape) zooms out\n"
    "and clears the search.\n"
    "  --cpu, --sites, --value M, --monitor, --section N: as for fasthprof collapsed\n"
    "             (--monitor: a lock flame graph, the monitor's class on top)\n"
    "  --no-threads  one graph for all threads, without thread roots (--threads, as\n"
    "             collapsed takes it, is the default here)\n"
    "  --title TEXT  the page's title (default: the file name and what is drawn)\n"
    "  --depth N     a text file's depth= (the agent's default is 4): its stacks as\n"
    "             deep stand on \"(truncated at depth N)\"\n"
    "  -o OUT.html   where the page goes (standard output without it)\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done, 2 bad usage or bad input (one message on stderr).\n";

namespace {

// The tree of stacks, its nodes in one vector (index 0 the root) that link by index: building,
// writing and freeing it never recurse, however deep the stacks (the agent writes up to 65535
// frames, a crafted file more).
struct Node {
  std::string name;
  uint64_t value = 0;
  int kind = kFrameRoot;
  std::map<std::string, uint32_t> children;  // name -> node index
};

// What the frames of a table's stacks are (FrameKind).
struct FrameKinds {
  std::unordered_set<std::string> natives;
  bool class_leaf = false;    // SITES, MONITOR TIME: the innermost frame is a class
  bool thread_roots = false;  // the outermost frame may be "thread NAME"

  int of(std::string_view name, bool outermost, bool innermost) const {
    if (outermost && thread_roots && name.substr(0, 7) == "thread ") return kFrameThread;
    if (name.substr(0, 20) == "(truncated at depth ") return kFrameTruncated;
    if (innermost && class_leaf) return kFrameClass;
    if (natives.count(std::string(name)) != 0) return kFrameNative;
    for (std::string_view jdk : {"java.", "javax.", "jdk.", "sun.", "com.sun."}) {
      if (name.substr(0, jdk.size()) == jdk) return kFrameJdk;
    }
    return kFrameApplication;
  }
};

// Adds value along a folded stack ("a;b;c"), from the root.
void add_stack(std::vector<Node>* nodes, const std::string& stack, uint64_t value, const FrameKinds& kinds) {
  (*nodes)[0].value += value;
  uint32_t node = 0;
  size_t start = 0;
  while (start <= stack.size()) {
    size_t end = stack.find(';', start);
    if (end == std::string::npos) end = stack.size();
    std::string name = stack.substr(start, end - start);
    auto [child, added] = (*nodes)[node].children.emplace(name, static_cast<uint32_t>(nodes->size()));
    if (added) {
      const int kind = kinds.of(name, start == 0, end == stack.size());
      nodes->push_back(Node{std::move(name), 0, kind, {}});
    }
    node = child->second;
    (*nodes)[node].value += value;
    start = end + 1;
  }
}

// A JSON string literal that is also safe inside <script>: '<' is escaped, so no "</script>".
void json_string(std::string* out, std::string_view text) {
  *out += '"';
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      *out += escaped;
    } else {
      *out += static_cast<char>(c);
    }
  }
  *out += '"';
}

// The tree as a flat list of [name, value, parent, kind] (the parent's place in the list, -1 for the
// root), in depth-first order with each node's children in name order, as flame graphs draw them
// left to right (the same stacks line up in the graphs of two runs). Flat, because a browser's
// parser gives up on an array literal nested some thousands deep; the page links it up itself.
void json_nodes(std::string* out, const std::vector<Node>& nodes) {
  *out += '[';
  std::vector<std::pair<uint32_t, int64_t>> pending = {{0, -1}};  // node, parent's place
  for (int64_t place = 0; !pending.empty(); ++place) {
    const auto [index, parent] = pending.back();
    pending.pop_back();
    const Node& node = nodes[index];
    if (place > 0) *out += ',';
    *out += '[';
    json_string(out, node.name);
    *out += ',' + std::to_string(node.value) + ',' + std::to_string(parent) + ',' + std::to_string(node.kind) + ']';
    for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
      pending.emplace_back(child->second, place);
    }
  }
  *out += ']';
}


// What the page draws, for its title: "CPU SAMPLES, 1 section added up, in samples".
std::string drawn(Kind kind, const Table& table, int metric, const Loaded& loaded) {
  if (kind == Kind::kSites) return "allocation sites by " + std::string(table.metrics[metric]) + ", " + table.what;
  if (kind == Kind::kMonitor) return "monitor contention, " + table.what + ", in us blocked";
  return table.what + (table.metrics[0] == "us"                       ? ", in us"
                       : !loaded.text && loaded.model.cpu_is_times() ? ", in ms"
                                                                     : ", in samples");
}

}  // namespace

int flame_main(int argc, char** argv) {
  Args args;
  if (!parse_args("flame", argc, argv, {"--cpu", "--sites", "--monitor", "--threads", "--no-threads"}, {"--value", "--section", "--title", "--depth", kMaxExpandedOption},
                  &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kFlameUsage, stdout);
    return kExitOk;
  }
  if (args.has("--value") && (args.has("--cpu") || args.has("--monitor"))) {
    return fail("flame", "--value goes with --sites, not --cpu or --monitor");
  }
  uint64_t section = 0;
  if (args.has("--section") && (!parse_count(args.value("--section"), &section) || section == 0)) {
    return fail("flame", "--section takes a number from 1");
  }
  uint64_t depth = 0;
  if (args.has("--depth") && (!parse_count(args.value("--depth"), &depth) || depth == 0 || depth > 65535)) {
    return fail("flame", "--depth takes the agent's depth=, 1 to 65535");
  }
  if (args.operands.size() != 1) return fail("flame", "needs one FILE (see fasthprof flame --help)");
  int metric = 0;
  if (args.has("--value")) {
    metric = metric_index(Kind::kSites, args.value("--value"));
    if (metric < 0) {
      return fail("flame", "--value %.*s: not live-bytes, live-objects, alloc-bytes or alloc-objects",
                  static_cast<int>(args.value("--value").size()), args.value("--value").data());
    }
  }
  const std::string path(args.operands[0]);
  std::unique_ptr<Loaded> loaded = load("flame", path.c_str(), args, true);
  if (loaded == nullptr) return kExitBadInput;
  Kind kind = Kind::kCpu;
  if (!choose_kind("flame", path.c_str(), args, *loaded, &kind)) return kExitBadInput;
  Table table;
  if (depth != 0 && !loaded->text) {
    return fail("flame", "--depth is for text files: %s records its depth= (CONTROL SETTINGS)", path.c_str());
  }
  const StackRoots roots{!args.has("--no-threads"), true, static_cast<uint32_t>(depth)};
  if (!build_table("flame", path.c_str(), *loaded, kind, Grouping::kStack, section, &table, roots)) {
    return kExitBadInput;
  }
  if (!table.coverage.empty()) std::fprintf(stderr, "fasthprof flame: %s\n", table.coverage.c_str());

  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  const FrameKinds kinds{native_frames(*loaded), kind != Kind::kCpu, table.thread_roots};
  for (const auto& [stack, values] : table.rows) {
    if (values[metric] != 0) add_stack(&nodes, stack, values[metric], kinds);
  }
  // table.what names the section(s): "CPU SAMPLES, 2 sections added up", "SITES 1 (at byte 123)".
  const std::string what = drawn(kind, table, metric, *loaded);
  const std::string title = args.has("--title") ? std::string(args.value("--title")) : path + ": " + what;

  std::string page;
  page += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html_text(title) + "</title>\n";
  page += kFlamePageStyle;
  page += "</head><body>\n<h3>" + html_text(title) + "</h3>\n";
  if (!table.coverage.empty()) page += "<p id=\"coverage\" class=\"warning\">" + html_text(table.coverage) + "</p>\n";
  if (table.truncated_depth > 0) {
    page += "<p id=\"truncated\">Stacks of " + std::to_string(table.truncated_depth) +
            " frames (the file's depth=) may have been cut: they stand on " + html_text(truncated_frame(table.truncated_depth)) +
            "; a larger depth= shows their callers.</p>\n";
  }
  page += "<div id=\"bar\"><input id=\"search\" placeholder=\"search\" size=\"30\"> <button id=\"reset\">Reset</button>"
          " <button id=\"reverse\">Callers</button> <span id=\"matched\"></span> <span>total " +
          std::to_string(nodes[0].value) + "</span> <span id=\"legend\"></span></div>\n";
  page += "<div id=\"status\"></div>\n<div id=\"chart\"></div>\n<script>\nconst ICICLE = ";
  page += kind == Kind::kSites ? "true" : "false";
  page += ";\nconst NODES = ";
  json_nodes(&page, nodes);
  page += ";\n</script>\n";
  page += kFlamePageScript;
  page += "</body></html>\n";

  Output output;
  if (!output.open("flame", args.output)) return kExitBadInput;
  std::fwrite(page.data(), 1, page.size(), output.file());
  return output.close("flame") ? kExitOk : kExitBadInput;
}

}  // namespace fasthprof::cli
