// What a heap dump by fork costs this machine per page of memory (docs/heap-dumps.md "Dumps by
// fork", bench/README.md "What a page costs"): a block of anonymous memory like a Java heap, every
// page written, then
//   fault_in_us      the first write of a page (the kernel maps it),
//   fork_ms          the fork() of the process (its page tables are copied: this is the pause),
//   child_read_us    the child's first read of a page (its TLB, on some virtual machines also the
//                    hypervisor's shadow tables: the child's dump reads every page once),
//   child_reread_us  the child's second read of the same page, for comparison,
//   cow_write_us     the parent's write to a page the child still shares (the page is copied: what
//                    a collection pays per page it writes while a dump's child lives),
//   plain_write_us   the same write with no child.
// Each per page, over the whole block. --huge asks for transparent huge pages (madvise), as
// -XX:+UseTransparentHugePages does; the line says how much of the block the kernel gave in huge pages.
//
//   build/bench/fork_page_costs [--mib 1024] [--huge]
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>

#include "base/fd_io.h"

namespace {

constexpr size_t kPage = 4096;

double now_seconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// One byte of every page read (summed, so that the reads are not optimized away) or written.
long read_pages(const volatile char* block, size_t bytes) {
  long sum = 0;
  for (size_t at = 0; at < bytes; at += kPage) sum += block[at];
  return sum;
}

void write_pages(volatile char* block, size_t bytes, char value) {
  for (size_t at = 0; at < bytes; at += kPage) block[at] = value;
}

// AnonHugePages of /proc/self/smaps_rollup in MiB (-1 when unreadable).
long huge_mib() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("AnonHugePages:", 0) == 0) return std::strtol(line.c_str() + 14, nullptr, 10) / 1024;
  }
  return -1;
}

struct ChildFigures {
  double first_read = 0;
  double reread = 0;
  long sum = 0;
};

// The child: reads every page twice, reports, then waits (sharing the pages) until told to end.
[[noreturn]] void child_main(const char* block, size_t bytes, int report_fd, int end_fd) {
  ChildFigures figures;
  double start = now_seconds();
  figures.sum = read_pages(block, bytes);
  figures.first_read = now_seconds() - start;
  start = now_seconds();
  figures.sum += read_pages(block, bytes);
  figures.reread = now_seconds() - start;
  fasthprof::write_all(report_fd, &figures, sizeof figures);
  char byte = 0;
  fasthprof::read_all(end_fd, &byte, 1);
  _exit(0);
}

int usage() {
  std::fprintf(stderr, "usage: fork_page_costs [--mib N (default 1024)] [--huge]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 1024;
  bool huge = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--huge") == 0) {
      huge = true;
    } else if (std::strcmp(argv[i], "--mib") == 0 && i + 1 < argc) {
      char* end = nullptr;
      mib = std::strtoul(argv[++i], &end, 10);
      if (*end != '\0' || mib == 0) return usage();
    } else {
      return usage();
    }
  }
  const size_t bytes = mib << 20;
  const double pages = static_cast<double>(bytes / kPage);
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    std::fprintf(stderr, "fork_page_costs: cannot map %zu MiB: %s\n", mib, std::strerror(errno));
    return 1;
  }
  auto* block = static_cast<char*>(mapped);
  madvise(block, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  double start = now_seconds();
  std::memset(block, 1, bytes);
  const double fault_in = now_seconds() - start;
  const long huge_given = huge_mib();
  start = now_seconds();
  write_pages(block, bytes, 2);
  const double plain_write = now_seconds() - start;

  int report[2];
  int end[2];
  if (pipe(report) != 0 || pipe(end) != 0) {
    std::fprintf(stderr, "fork_page_costs: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  start = now_seconds();
  pid_t child = fork();
  const double fork_seconds = now_seconds() - start;
  if (child < 0) {
    std::fprintf(stderr, "fork_page_costs: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) child_main(block, bytes, report[1], end[0]);
  ChildFigures figures;
  const bool reported = fasthprof::read_all(report[0], &figures, sizeof figures);
  // The child is alive and shares every page: each write now copies one.
  start = now_seconds();
  write_pages(block, bytes, 3);
  const double cow_write = now_seconds() - start;
  fasthprof::write_all(end[1], "x", 1);
  int status = 0;
  waitpid(child, &status, 0);
  if (!reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "fork_page_costs: the child did not report\n");
    return 1;
  }
  const double us = 1e6 / pages;
  std::printf("fork_page_costs: mib=%zu pages=%s huge_mib=%ld fault_in_us=%.2f fork_ms=%.1f fork_ms_per_gib=%.1f "
              "child_read_us=%.3f child_reread_us=%.3f cow_write_us=%.2f plain_write_us=%.3f\n",
              mib, huge ? "thp" : "4k", huge_given, fault_in * us, fork_seconds * 1e3,
              fork_seconds * 1e3 * 1024.0 / static_cast<double>(mib), figures.first_read * us, figures.reread * us,
              cow_write * us, plain_write * us);
  // What it means for a dump by fork of a heap this size (the first reads are the child's on top of
  // HotSpot's dumping; every page a collection writes meanwhile pays cow_write_us).
  std::printf("fork_page_costs: a dump by fork of %zu MiB: the program held about %.0f ms for the fork, the child "
              "about %.2f s longer for its first reads, a collection %.2f s longer per GiB it writes meanwhile\n",
              mib, fork_seconds * 1e3, figures.first_read - figures.reread, cow_write * 1024.0 / static_cast<double>(mib));
  munmap(block, bytes);
  return 0;
}
