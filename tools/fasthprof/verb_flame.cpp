// `fasthprof flame FILE -o out.html`: a flame graph (CPU) or an icicle (allocation sites) in one
// self-contained HTML page: the data, style and script inline, nothing fetched.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "profile.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kFlameUsage[] =
    "usage: fasthprof flame [--cpu | --sites [--value METRIC] | --monitor]\n"
    "                       [--threads]\n"
    "                       [--section N] [--title TEXT] -o OUT.html FILE\n"
    "Writes a flame graph as one self-contained HTML page (data, style and script inline; it fetches\n"
    "nothing): the stacks of `fasthprof collapsed` (same options, same data), each frame as wide as\n"
    "its count. CPU sections draw as a flame graph (callers at the bottom); SITES as an icicle\n"
    "(callers at the top, the allocated class as the innermost frame).\n"
    "In the page: hover a frame for its name, count and percentage; click it to zoom into it; type\n"
    "in the search box to highlight the frames whose name contains the text (the matched share is\n"
    "shown); Reset (or Escape) zooms out and clears the search.\n"
    "  --cpu, --sites, --value M, --monitor, --threads, --section N: as for fasthprof\n"
    "             collapsed (--monitor: a lock flame graph, the monitor's class on\n"
    "             top)\n"
    "  --title TEXT  the page's title (default: the file name and what is drawn)\n"
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
  std::map<std::string, uint32_t> children;  // name -> node index
};

// Adds value along a folded stack ("a;b;c"), from the root.
void add_stack(std::vector<Node>* nodes, const std::string& stack, uint64_t value) {
  (*nodes)[0].value += value;
  uint32_t node = 0;
  size_t start = 0;
  while (start <= stack.size()) {
    size_t end = stack.find(';', start);
    if (end == std::string::npos) end = stack.size();
    std::string name = stack.substr(start, end - start);
    auto [child, added] = (*nodes)[node].children.emplace(name, static_cast<uint32_t>(nodes->size()));
    if (added) nodes->push_back(Node{std::move(name), 0, {}});
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

// The tree as a flat list of [name, value, parent] (the parent's place in the list, -1 for the
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
    *out += ',' + std::to_string(node.value) + ',' + std::to_string(parent) + ']';
    for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
      pending.emplace_back(child->second, place);
    }
  }
  *out += ']';
}

std::string html_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

constexpr char kPageStyle[] = R"CSS(<style>
body { font: 12px sans-serif; margin: 8px; }
#bar { display: flex; gap: 8px; align-items: center; margin-bottom: 6px; }
#status { min-height: 16px; font-family: monospace; white-space: pre; margin: 4px 0; }
#chart { position: relative; width: 100%; overflow: hidden; border: 1px solid #ccc; }
.frame { position: absolute; height: 17px; box-sizing: border-box; border: 1px solid #fff; overflow: hidden;
  white-space: nowrap; font: 11px monospace; line-height: 15px; padding-left: 2px; cursor: pointer; }
.frame.match { background: #e040fb !important; }
.warning { color: #a00000; font-weight: bold; margin: 4px 0; }
</style>
)CSS";

constexpr char kPageScript[] = R"JS(<script>
"use strict";
(function () {
  const ROW = 17;
  const chart = document.getElementById("chart");
  const status = document.getElementById("status");
  const search = document.getElementById("search");
  const matched = document.getElementById("matched");
  // Nodes as [name, value, children, parent], linked from the flat list. No function here
  // recurses: a stack may be tens of thousands of frames deep.
  const nodes = NODES.map((n) => [n[0], n[1], [], null]);
  NODES.forEach((n, i) => {
    if (n[2] >= 0) {
      nodes[i][3] = nodes[n[2]];
      nodes[n[2]][2].push(nodes[i]);
    }
  });
  const DATA = nodes[0];
  const total = DATA[1];
  let zoomed = DATA;
  let path = [];  // the zoomed node's ancestors, drawn full width above (icicle) or below (flame) it
  function depthOf(top) {
    let deepest = 0;
    const pending = [[top, 1]];
    while (pending.length) {
      const [node, d] = pending.pop();
      deepest = Math.max(deepest, d);
      for (const child of node[2]) pending.push([child, d + 1]);
    }
    return deepest;
  }
  function color(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    const java = /^(java|javax|jdk|sun|com\.sun)\./.test(name);
    return java ? "hsl(" + (30 + h % 25) + ",80%," + (55 + h % 15) + "%)"
                : "hsl(" + (h % 40) + ",85%," + (58 + h % 12) + "%)";
  }
  function draw() {
    chart.textContent = "";
    const width = chart.clientWidth;
    const rows = path.length + depthOf(zoomed);
    chart.style.height = rows * ROW + "px";
    const place = (node, depth, x, w, ancestor) => {
      if (w < 0.5) return;
      const div = document.createElement("div");
      div.className = "frame";
      const row = ICICLE ? depth : rows - 1 - depth;
      div.style.left = x + "px";
      div.style.top = row * ROW + "px";
      div.style.width = w + "px";
      div.style.background = color(node[0]);
      div.textContent = w > 30 ? node[0] : "";
      div.dataset.name = node[0];
      div.dataset.value = node[1];
      div.dataset.depth = depth;
      if (!node[2].length) div.dataset.leaf = "1";
      const share = (100 * node[1] / total).toFixed(2);
      div.title = node[0] + "\n" + node[1] + " (" + share + "%)";
      div.onmouseenter = () => { status.textContent = node[0] + "  " + node[1] + " (" + share + "%)"; };
      div.onclick = () => zoom(node);
      if (search.value && node[0].includes(search.value)) div.classList.add("match");
      chart.appendChild(div);
      if (ancestor) return;
      let at = x;
      for (const child of node[2]) {
        const cw = w * child[1] / node[1];
        pending.push([child, depth + 1, at, cw]);
        at += cw;
      }
    };
    const pending = [];
    path.forEach((node, i) => place(node, i, 0, width, true));
    place(zoomed, path.length, 0, width, false);
    while (pending.length) place(...pending.pop(), false);
    showMatched();
  }
  function zoom(node) {
    const trail = [];
    for (let up = node[3]; up; up = up[3]) trail.push(up);
    path = trail.reverse();
    zoomed = node;
    draw();
  }
  function matchedValue(top) {
    let sum = 0;
    const pending = [top];
    while (pending.length) {
      const node = pending.pop();
      if (node[0].includes(search.value)) {
        sum += node[1];
      } else {
        for (const child of node[2]) pending.push(child);
      }
    }
    return sum;
  }
  function showMatched() {
    matched.textContent = search.value ? "matched " + (100 * matchedValue(DATA) / total).toFixed(2) + "%" : "";
  }
  function reset() {
    search.value = "";
    path = [];
    zoomed = DATA;
    draw();
  }
  search.addEventListener("input", draw);
  document.getElementById("reset").addEventListener("click", reset);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") reset(); });
  window.addEventListener("resize", draw);
  draw();
})();
</script>
)JS";

}  // namespace

int flame_main(int argc, char** argv) {
  Args args;
  if (!parse_args("flame", argc, argv, {"--cpu", "--sites", "--monitor", "--threads"}, {"--value", "--section", "--title", kMaxExpandedOption},
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
  if (!build_table("flame", path.c_str(), *loaded, kind, Grouping::kStack, section, &table, args.has("--threads"))) {
    return kExitBadInput;
  }
  if (!table.coverage.empty()) std::fprintf(stderr, "fasthprof flame: %s\n", table.coverage.c_str());

  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  for (const auto& [stack, values] : table.rows) {
    if (values[metric] != 0) add_stack(&nodes, stack, values[metric]);
  }
  // table.what names the section(s): "CPU SAMPLES, 2 sections added up", "SITES 1 (at byte 123)".
  std::string what;
  if (kind == Kind::kSites) {
    what = "allocation sites by " + std::string(table.metrics[metric]) + ", " + table.what;
  } else if (kind == Kind::kMonitor) {
    what = "monitor contention, " + table.what + ", in us blocked";
  } else {
    what = table.what + (table.metrics[0] == "us"                          ? ", in us"
                         : !loaded->text && loaded->model.cpu_is_times() ? ", in ms"
                                                                         : ", in samples");
  }
  const std::string title = args.has("--title") ? std::string(args.value("--title")) : path + ": " + what;

  std::string page;
  page += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html_text(title) + "</title>\n";
  page += kPageStyle;
  page += "</head><body>\n<h3>" + html_text(title) + "</h3>\n";
  if (!table.coverage.empty()) page += "<p id=\"coverage\" class=\"warning\">" + html_text(table.coverage) + "</p>\n";
  page += "<div id=\"bar\"><input id=\"search\" placeholder=\"search\" size=\"30\"> <button id=\"reset\">Reset</button>"
          " <span id=\"matched\"></span> <span>total " + std::to_string(nodes[0].value) + "</span></div>\n";
  page += "<div id=\"status\"></div>\n<div id=\"chart\"></div>\n<script>\nconst ICICLE = ";
  page += kind == Kind::kSites ? "true" : "false";
  page += ";\nconst NODES = ";
  json_nodes(&page, nodes);
  page += ";\n</script>\n";
  page += kPageScript;
  page += "</body></html>\n";

  Output output;
  if (!output.open("flame", args.output)) return kExitBadInput;
  std::fwrite(page.data(), 1, page.size(), output.file());
  return output.close("flame") ? kExitOk : kExitBadInput;
}

}  // namespace fasthprof::cli
