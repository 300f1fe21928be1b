// Runs the class-file rewriter on arbitrary bytes: it must rewrite, decline or reject anything
// without crashing or reading outside the input; a rejection says why in one line; a rewrite is
// the same every time, larger than its input, and itself a class file the rewriter reads. The same
// input is also rewritten with every kind of call (allocations and clones, positions before
// invokes, the mark calls after allocations), and again without the mark calls: the same sites.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "classfile/class_rewriter.h"

namespace {

[[noreturn]] void fail(const char* what, const fasthprof::RewriteResult& result) {
  std::fprintf(stderr, "class_rewriter_fuzz: %s (class %s, error \"%s\")\n", what, result.class_name.c_str(),
               result.error.c_str());
  std::abort();
}

fasthprof::RewriteResult rewrite(const uint8_t* data, size_t size) {
  uint32_t next = 1;
  return fasthprof::rewrite_class(data, size, fasthprof::TrackerCalls{},
                                  [&](std::string_view, std::string_view, std::string_view) { return next++; });
}

// Everything at once: entry and exit calls, allocation calls (clones too), position calls before
// invokes and, with `marks`, the mark calls after the allocations.
fasthprof::RewriteResult rewrite_all(const uint8_t* data, size_t size, bool marks = true) {
  fasthprof::RewritePlan plan;
  plan.allocations = plan.call_positions = plan.clones = true;
  plan.marks = marks;
  uint32_t next = 1;
  plan.assign_method_id = [&](std::string_view, std::string_view, std::string_view) { return next++; };
  plan.assign_site_id = [&](std::string_view, const fasthprof::InjectedSite&) { return next++; };
  return fasthprof::rewrite_class(data, size, plan);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes, so that a read past the end is caught by the sanitizers.
  std::vector<uint8_t> input(data, data + size);
  fasthprof::RewriteResult first = rewrite(input.data(), input.size());
  switch (first.outcome) {
    case fasthprof::RewriteOutcome::kMalformed:
      if (first.error.empty() || first.error.find('\n') != std::string::npos) fail("no one-line reason", first);
      if (!first.bytes.empty()) fail("bytes with kMalformed", first);
      break;
    case fasthprof::RewriteOutcome::kNothingToDo:
      if (!first.bytes.empty() || !first.methods.empty()) fail("bytes or methods with kNothingToDo", first);
      break;
    case fasthprof::RewriteOutcome::kRewritten: {
      if (first.methods.empty() || first.bytes.size() <= size) fail("a rewrite that adds nothing", first);
      fasthprof::RewriteResult again = rewrite(input.data(), input.size());
      if (again.outcome != first.outcome || again.bytes != first.bytes) fail("two different rewrites", first);
      std::vector<uint8_t> output = first.bytes;
      fasthprof::RewriteResult twice = rewrite(output.data(), output.size());
      if (twice.outcome == fasthprof::RewriteOutcome::kMalformed) fail("its own output malformed", twice);
      if (twice.class_name != first.class_name) fail("another class name once rewritten", twice);
      break;
    }
  }
  // With every kind of call: never a crash, a one-line reason, and a rewrite the rewriter reads again.
  fasthprof::RewriteResult all = rewrite_all(input.data(), input.size());
  if (all.outcome == fasthprof::RewriteOutcome::kMalformed && (all.error.empty() || all.error.find('\n') != std::string::npos))
    fail("no one-line reason (every call)", all);
  if (all.outcome == fasthprof::RewriteOutcome::kRewritten) {
    std::vector<uint8_t> output = all.bytes;
    fasthprof::RewriteResult twice = rewrite_all(output.data(), output.size());
    if (twice.outcome == fasthprof::RewriteOutcome::kMalformed) fail("its own output malformed (every call)", twice);
  }
  // The mark calls change what is added, never what is counted: without them nothing is marked, and
  // unless they pushed a method past a limit (left alone, its sites unlisted) the same outcome and
  // sites.
  fasthprof::RewriteResult unmarked = rewrite_all(input.data(), input.size(), false);
  for (const fasthprof::InjectedSite& u : unmarked.sites)
    if (u.marked) fail("a site marked without the mark calls", unmarked);
  if (unmarked.methods_left_alone > all.methods_left_alone) fail("more left alone without the mark calls", all);
  if (unmarked.methods_left_alone < all.methods_left_alone) return 0;
  if (unmarked.outcome != all.outcome || unmarked.sites.size() != all.sites.size())
    fail("other sites or outcome with the mark calls", all);
  for (size_t i = 0; i < all.sites.size(); ++i) {
    const fasthprof::InjectedSite &a = all.sites[i], &u = unmarked.sites[i];
    if (a.offset != u.offset || a.type != u.type || a.id != u.id || a.method_name != u.method_name)
      fail("a site differs with the mark calls", all);
  }
  return 0;
}
