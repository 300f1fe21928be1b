// rewrite_classes: runs runtime/classfile/class_rewriter over class files, for the JVM checks
// (tests/integration/class_rewriter_jvm.py) and by hand.
//
//   rewrite_classes --out DIR [--map FILE] [--tracker CLASS] [--allocations [--marks] [--clones] [--sites FILE]]
//                   [--no-calls] INPUT...
//
// INPUT is a .class file or a folder searched for them; each class is written under DIR at its
// path relative to its input folder (a file given alone: at its own name), rewritten when the
// rewriter rewrote it, else as it was. Methods are numbered 1, 2, 3... in the order the rewriter
// asks; --map writes one line per number: "id class name descriptor". --allocations injects the
// allocation calls too (--no-calls: those alone), sites numbered 1, 2, 3... apart from the methods;
// --sites writes one line per site: "id class name descriptor offset type"; --marks injects the mark
// calls after the allocations too, and each line of --sites ends with " marked" or " unmarked"
// (InjectedSite::marked, once the class is rewritten); --clones counts the calls sure to reach
// Object.clone too (RewritePlan::clones). A site without a type as written (InjectedSite::clones,
// ::instantiates) gets the type "<clone>" or "<instance>" in --sites. The last line on stdout
// counts the outcomes: "rewritten R nothing N malformed M methods I left_alone L widened W sites S
// bytes_in B bytes_out O" (O: the classes as written, rewritten or not); each malformed class gets
// a line "malformed: <path>: <error>" before it.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "classfile/class_rewriter.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  fs::path out_dir;
  std::string map_path, sites_path;
  fasthprof::RewritePlan plan;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) out_dir = argv[++i];
    else if (arg == "--map" && i + 1 < argc) map_path = argv[++i];
    else if (arg == "--sites" && i + 1 < argc) sites_path = argv[++i];
    else if (arg == "--tracker" && i + 1 < argc) plan.tracker.class_name = argv[++i];
    else if (arg == "--allocations") plan.allocations = true;
    else if (arg == "--marks") plan.marks = true;
    else if (arg == "--clones") plan.clones = true;
    else if (arg == "--no-calls") plan.calls = false;
    else inputs.push_back(arg);
  }
  if (out_dir.empty() || inputs.empty()) {
    std::fprintf(stderr, "usage: rewrite_classes --out DIR [--map FILE] [--tracker CLASS] [--allocations [--marks] "
                         "[--clones] [--sites FILE]] [--no-calls] INPUT...\n");
    return 2;
  }
  std::vector<std::pair<fs::path, fs::path>> files;  // (file, path under DIR)
  for (const auto& input : inputs) {
    if (fs::is_directory(input)) {
      for (const auto& entry : fs::recursive_directory_iterator(input))
        if (entry.is_regular_file() && entry.path().extension() == ".class")
          files.emplace_back(entry.path(), fs::relative(entry.path(), input));
    } else {
      files.emplace_back(input, fs::path(input).filename());
    }
  }
  std::string map_text;
  std::vector<std::string> site_lines;  // by number - 1, without the marked word
  uint32_t next_id = 1, next_site = 1;
  plan.assign_method_id = [&](std::string_view class_name, std::string_view name, std::string_view descriptor) {
    map_text += std::to_string(next_id) + " " + std::string(class_name) + " " + std::string(name) + " " +
                std::string(descriptor) + "\n";
    return next_id++;
  };
  plan.assign_site_id = [&](std::string_view class_name, const fasthprof::InjectedSite& site) {
    site_lines.push_back(std::to_string(next_site) + " " + std::string(class_name) + " " + site.method_name + " " +
                         site.descriptor + " " + std::to_string(site.offset) + " " +
                         (site.clones ? "<clone>" : site.instantiates ? "<instance>" : site.type));
    return next_site++;
  };
  size_t rewritten = 0, nothing = 0, malformed = 0, methods = 0, left_alone = 0, widened = 0, sites = 0;
  size_t bytes_in = 0, bytes_out = 0;
  std::vector<bool> marked;  // by site number - 1
  for (const auto& [file, relative] : files) {
    std::ifstream in(file, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fasthprof::RewriteResult result = fasthprof::rewrite_class(bytes.data(), bytes.size(), plan);
    const std::vector<uint8_t>* write = &bytes;
    switch (result.outcome) {
      case fasthprof::RewriteOutcome::kRewritten: ++rewritten; write = &result.bytes; break;
      case fasthprof::RewriteOutcome::kNothingToDo: ++nothing; break;
      case fasthprof::RewriteOutcome::kMalformed:
        ++malformed;
        std::printf("malformed: %s: %s\n", file.c_str(), result.error.c_str());
        break;
    }
    methods += result.methods.size();
    left_alone += result.methods_left_alone;
    widened += result.branches_widened;
    sites += result.sites.size();
    for (const fasthprof::InjectedSite& site : result.sites) {
      if (result.outcome != fasthprof::RewriteOutcome::kRewritten) break;
      if (marked.size() < site.id) marked.resize(site.id, false);
      marked[site.id - 1] = site.marked;
    }
    bytes_in += bytes.size();
    bytes_out += write->size();
    fs::path target = out_dir / relative;
    fs::create_directories(target.parent_path());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(write->data()), static_cast<std::streamsize>(write->size()));
    if (!out) {
      std::fprintf(stderr, "rewrite_classes: cannot write %s\n", target.c_str());
      return 1;
    }
  }
  if (!map_path.empty()) {
    std::ofstream map(map_path, std::ios::trunc);
    map << map_text;
  }
  if (!sites_path.empty()) {
    std::ofstream map(sites_path, std::ios::trunc);
    for (size_t i = 0; i < site_lines.size(); ++i) {
      map << site_lines[i];
      if (plan.marks) map << (i < marked.size() && marked[i] ? " marked" : " unmarked");
      map << "\n";
    }
  }
  std::printf("rewritten %zu nothing %zu malformed %zu methods %zu left_alone %zu widened %zu sites %zu bytes_in %zu "
              "bytes_out %zu\n",
              rewritten, nothing, malformed, methods, left_alone, widened, sites, bytes_in, bytes_out);
  return 0;
}
