// The style and script of `fasthprof flame`'s page (verb_flame.cpp writes the data between them).
// The data: ICICLE (SITES draw top-down), and NODES, a flat list of [name, value, parent, kind]
// in depth-first order (parent: the parent's place in the list, -1 for the root), kind one of
// the FrameKind values below, which colour the frames.
#pragma once

namespace fasthprof::cli {

// What a frame is; the page colours each kind apart and lists the kinds it draws in its legend.
enum FrameKind : int {
  kFrameApplication = 0,  // Java code of the program
  kFrameJdk = 1,          // java.*, javax.*, jdk.*, sun.*, com.sun.*
  kFrameNative = 2,       // a native method
  kFrameClass = 3,        // the allocated class (SITES), the monitor's class (MONITOR TIME)
  kFrameThread = 4,       // a thread root ("thread main")
  kFrameTruncated = 5,    // the root of stacks as deep as the file's depth
  kFrameRoot = 6,         // "all"
};

inline constexpr char kFlamePageStyle[] = R"CSS(<style>
body { font: 12px sans-serif; margin: 8px; }
h3 { margin: 4px 0; font-size: 14px; }
#bar { display: flex; gap: 8px; align-items: center; margin-bottom: 4px; flex-wrap: wrap; }
#legend span { padding: 1px 6px; font: 11px monospace; border-radius: 2px; }
#status { min-height: 16px; font-family: monospace; white-space: pre; margin: 2px 0; }
#chart { position: relative; width: 100%; overflow-x: hidden; overflow-y: auto; border: 1px solid #ccc; }
#plane { position: relative; width: 100%; }
.frame { position: absolute; height: 17px; box-sizing: border-box; border: 1px solid #fff; overflow: hidden;
  white-space: nowrap; font: 11px monospace; line-height: 15px; padding-left: 2px; cursor: pointer; }
.frame.match { background: #e040fb !important; }
.warning { color: #a00000; font-weight: bold; margin: 4px 0; }
</style>
)CSS";

inline constexpr char kFlamePageScript[] = R"JS(<script>
"use strict";
(function () {
  const ROW = 17;
  const KINDS = [["Java (application)", 110], ["JDK", 200], ["native", 0], ["class", 30], ["thread", 270],
                 ["truncated", -1], ["all", -1]];
  const chart = document.getElementById("chart");
  const status = document.getElementById("status");
  const search = document.getElementById("search");
  const matched = document.getElementById("matched");
  const reverseButton = document.getElementById("reverse");
  // Nodes as [name, value, children, parent, kind], linked from the flat list. No function here
  // recurses: a stack may be tens of thousands of frames deep.
  const nodes = NODES.map((n) => [n[0], n[1], [], null, n[3]]);
  NODES.forEach((n, i) => {
    if (n[2] >= 0) {
      nodes[i][3] = nodes[n[2]];
      nodes[n[2]][2].push(nodes[i]);
    }
  });
  const callees = nodes[0];
  let callers = null;  // the reverse tree, made on first use
  let DATA = callees;
  const total = DATA[1];
  let zoomed = DATA;
  let path = [];  // the zoomed node's ancestors, drawn full width above (icicle) or below (flame) it
  // The reverse (callers) tree: each frame's own value (less its children's) under a root of its
  // own, its callers above it, out to the outermost frame.
  function reverseTree() {
    const root = ["all", total, [], null, 6];
    const index = new Map([[root, new Map()]]);
    const pending = [callees];
    while (pending.length) {
      const node = pending.pop();
      let own = node[1];
      for (const child of node[2]) {
        own -= child[1];
        pending.push(child);
      }
      if (own <= 0 || node === callees) continue;
      let at = root;
      for (let up = node; up && up !== callees; up = up[3]) {
        const children = index.get(at);
        let next = children.get(up[0]);
        if (!next) {
          next = [up[0], 0, [], at, up[4]];
          children.set(up[0], next);
          index.set(next, new Map());
          at[2].push(next);
        }
        next[1] += own;
        at = next;
      }
    }
    const sort = [root];
    while (sort.length) {
      const node = sort.pop();
      node[2].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      sort.push(...node[2]);
    }
    return root;
  }
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
  function color(node) {
    const name = node[0];
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    const hue = KINDS[node[4]][1];
    if (hue < 0) return "hsl(0,0%," + (78 + h % 8) + "%)";
    return "hsl(" + (hue + h % 20) + ",70%," + (55 + h % 15) + "%)";
  }
  function legend() {
    const present = new Set();
    const pending = [callees];
    while (pending.length) {
      const node = pending.pop();
      present.add(node[4]);
      pending.push(...node[2]);
    }
    const box = document.getElementById("legend");
    KINDS.forEach((kind, i) => {
      if (!present.has(i) || i === 6) return;
      const span = document.createElement("span");
      span.textContent = kind[0];
      span.dataset.kind = i;
      span.style.background = color([kind[0], 0, [], null, i]);
      box.appendChild(span);
    });
  }
  function draw() {
    const plane = document.createElement("div");
    plane.id = "plane";
    chart.textContent = "";
    chart.appendChild(plane);
    const rows = path.length + depthOf(zoomed);
    plane.style.height = rows * ROW + "px";
    // The chart fills the window below its top, so its root is never below the fold.
    const room = Math.max(8 * ROW, window.innerHeight - chart.getBoundingClientRect().top - 12);
    chart.style.height = Math.min(rows * ROW + 2, room) + "px";
    const width = plane.clientWidth;
    const place = (node, depth, x, w, ancestor) => {
      if (w < 0.5) return;
      const div = document.createElement("div");
      div.className = "frame";
      const row = ICICLE ? depth : rows - 1 - depth;
      div.style.left = x + "px";
      div.style.top = row * ROW + "px";
      div.style.width = w + "px";
      div.style.background = color(node);
      div.textContent = w > 30 ? node[0] : "";
      div.dataset.name = node[0];
      div.dataset.value = node[1];
      div.dataset.depth = depth;
      div.dataset.kind = node[4];
      if (!node[2].length) div.dataset.leaf = "1";
      const share = (100 * node[1] / total).toFixed(2);
      div.title = node[0] + "\n" + node[1] + " (" + share + "%)\n" + KINDS[node[4]][0];
      div.onmouseenter = () => { status.textContent = node[0] + "  " + node[1] + " (" + share + "%)"; };
      div.onclick = () => zoom(node);
      if (search.value && node[0].includes(search.value)) div.classList.add("match");
      plane.appendChild(div);
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
    if (!ICICLE) chart.scrollTop = chart.scrollHeight;
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
  function reverse() {
    if (DATA === callees) {
      callers = callers || reverseTree();
      DATA = callers;
      reverseButton.textContent = "Callees";
      document.body.dataset.view = "callers";
    } else {
      DATA = callees;
      reverseButton.textContent = "Callers";
      document.body.dataset.view = "callees";
    }
    path = [];
    zoomed = DATA;
    draw();
  }
  search.addEventListener("input", draw);
  document.getElementById("reset").addEventListener("click", reset);
  reverseButton.addEventListener("click", reverse);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") reset(); });
  window.addEventListener("resize", draw);
  document.body.dataset.view = "callees";
  legend();
  draw();
})();
</script>
)JS";

}  // namespace fasthprof::cli
