// Rewriting cost per class (issue 15): runtime/classfile/class_rewriter over every class of a JDK, each
// class timed on its own, the median over classes printed in µs (the figure docs/performance.md
// quotes), with the 90th percentile, the mean and the throughput. The classes are read into
// memory first; each round rewrites all of them; a class's time is its fastest round. With
// --allocations the allocation calls are injected too (--no-calls: those alone, issue 28), and the
// sites counted; the byte line gives the class-file growth. --clones adds the calls before calls sure
// to reach Object.clone, as the agent's alloc=inject does where it holds the JIT's intrinsics back.
//
//   bench_class_rewrite --jimage JDK/bin/jimage --modules JDK/lib/modules [--rounds N] [--allocations [--no-calls] [--clones]]
//   bench_class_rewrite [--rounds N] [--allocations [--no-calls] [--clones]] DIR...   (class files found under DIR)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "classfile/class_rewriter.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::vector<uint8_t>> load(const std::vector<std::string>& folders) {
  std::vector<std::vector<uint8_t>> classes;
  for (const auto& folder : folders) {
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".class") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      classes.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  return classes;
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string jimage, modules;
  int rounds = 5;
  std::vector<std::string> folders;
  fasthprof::RewritePlan plan;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--jimage") && i + 1 < argc) jimage = argv[++i];
    else if (!std::strcmp(argv[i], "--modules") && i + 1 < argc) modules = argv[++i];
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--allocations")) plan.allocations = true;
    else if (!std::strcmp(argv[i], "--no-calls")) plan.calls = false;
    else if (!std::strcmp(argv[i], "--clones")) plan.clones = true;
    else folders.emplace_back(argv[i]);
  }
  fs::path extracted;
  if (!jimage.empty()) {
    extracted = fs::temp_directory_path() / ("fasthprof-classes-" + std::to_string(getpid()));
    std::string command = "'" + jimage + "' extract --dir '" + extracted.string() + "' '" + modules + "'";
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "bench_class_rewrite: %s failed\n", command.c_str());
      return 1;
    }
    folders.push_back(extracted.string());
  }
  if (folders.empty()) {
    std::fprintf(stderr, "usage: bench_class_rewrite --jimage JIMAGE --modules MODULES | DIR...\n");
    return 2;
  }
  auto classes = load(folders);
  if (!extracted.empty()) fs::remove_all(extracted);
  if (classes.empty()) {
    std::fprintf(stderr, "bench_class_rewrite: no class files\n");
    return 1;
  }
  uint32_t next_id = 1;
  plan.assign_method_id = [&](std::string_view, std::string_view, std::string_view) { return next_id++; };
  plan.assign_site_id = [&](std::string_view, const fasthprof::InjectedSite&) {
    return next_id++;
  };
  std::vector<double> best(classes.size(), 1e300);
  size_t rewritten = 0, nothing = 0, malformed = 0, methods = 0, sites = 0, left_alone = 0, bytes_in = 0, bytes_out = 0;
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < classes.size(); ++i) {
      const auto& bytes = classes[i];
      auto start = std::chrono::steady_clock::now();
      fasthprof::RewriteResult result = fasthprof::rewrite_class(bytes.data(), bytes.size(), plan);
      auto end = std::chrono::steady_clock::now();
      best[i] = std::min(best[i], std::chrono::duration<double, std::micro>(end - start).count());
      if (round > 0) continue;
      bytes_in += bytes.size();
      switch (result.outcome) {
        case fasthprof::RewriteOutcome::kRewritten: ++rewritten; bytes_out += result.bytes.size(); break;
        case fasthprof::RewriteOutcome::kNothingToDo: ++nothing; bytes_out += bytes.size(); break;
        case fasthprof::RewriteOutcome::kMalformed: ++malformed; bytes_out += bytes.size(); break;
      }
      methods += result.methods.size();
      sites += result.sites.size();
      left_alone += result.methods_left_alone;
    }
  }
  double total = 0;
  for (double t : best) total += t;
  std::printf("classes %zu (rewritten %zu, nothing to do %zu, malformed %zu), methods %zu, allocation sites %zu, "
              "left alone %zu\n",
              classes.size(), rewritten, nothing, malformed, methods, sites, left_alone);
  std::printf("bytes in %.1f MB, out %.1f MB (+%.1f %%)\n", static_cast<double>(bytes_in) / 1e6,
              static_cast<double>(bytes_out) / 1e6,
              100.0 * (static_cast<double>(bytes_out) - static_cast<double>(bytes_in)) / static_cast<double>(bytes_in));
  std::printf("rewrite per class (best of %d rounds): median %.2f us, p90 %.2f us, p99 %.2f us, mean %.2f us, "
              "%.0f MB/s\n",
              rounds, percentile(best, 0.5), percentile(best, 0.9), percentile(best, 0.99),
              total / static_cast<double>(best.size()), static_cast<double>(bytes_in) / total);
  return malformed == 0 ? 0 : 1;
}
