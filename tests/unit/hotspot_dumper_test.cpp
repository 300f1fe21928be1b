// find_hotspot_dumper against the libjvm.so of each JDK installed (loaded with dlopen in a child
// process of its own, so that two JVM libraries never meet in one process): every symbol the child
// of a fork dump calls is found with the signature it is called with, the collector's
// safepoint_workers() slot is found once in its vtable on JDK 17; JDKs not tested and a process
// without libjvm.so are refused with a reason. And the child's status line as the parent reads it.
#include "fork_dump/hotspot_dumper.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "fork_dump/elf_symbols.h"

namespace fasthprof {
namespace {

// In a child process: dlopen the JDK's libjvm.so, resolve, and check what the fork dump relies on.
// The child's exit code is 0 when everything holds; its complaint comes on the pipe.
std::string resolve_in_child(const std::string& library, int jdk, ForkHeapKind heap) {
  int out[2];
  if (::pipe(out) != 0) return "no pipe";
  pid_t child = ::fork();
  if (child == 0) {
    ::close(out[0]);
    auto fail = [&](const std::string& why) {
      ssize_t ignored = ::write(out[1], why.data(), why.size());
      (void)ignored;
      ::_exit(1);
    };
    if (::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) fail(std::string("dlopen: ") + dlerror());
    std::string why;
    std::optional<HotSpotDumper> dumper = find_hotspot_dumper(jdk, heap, &why);
    if (!dumper) fail("not resolved: " + why);
    if ((jdk == 17) != (dumper->dump17 != nullptr) || (jdk == 25) != (dumper->dump25 != nullptr)) fail("dump entry");
    if (!dumper->destroy || !dumper->error_text || !dumper->lock || !dumper->unlock || !dumper->log_events) {
      fail("a symbol is missing");
    }
    if ((jdk == 25) != (dumper->current_operation != nullptr)) fail("current operation");
    if (*dumper->log_events != true) fail("LogEvents is not the VM's default (true)");
    bool needs_slot = jdk == 17 && heap != ForkHeapKind::kSerial;
    if (needs_slot != (dumper->workers_slot != nullptr)) fail("workers slot");
    if (needs_slot) {
      // The slot holds the collector's own safepoint_workers().
      std::optional<ElfSymbols> symbols = ElfSymbols::open(dumper->library, &why);
      std::optional<LoadedObject> jvm = loaded_object("libjvm.so");
      const char* name = heap == ForkHeapKind::kG1 ? "_ZN15G1CollectedHeap17safepoint_workersEv"
                                                   : "_ZN20ParallelScavengeHeap17safepoint_workersEv";
      std::optional<ElfSymbol> function = symbols ? symbols->find(name) : std::nullopt;
      if (!function || !jvm || *dumper->workers_slot != reinterpret_cast<void*>(jvm->base + function->value)) {
        fail("the slot does not hold the collector's safepoint_workers()");
      }
    }
    ::_exit(0);
  }
  ::close(out[1]);
  std::string said;
  char buffer[512];
  ssize_t got;
  while ((got = ::read(out[0], buffer, sizeof buffer)) > 0) said.append(buffer, static_cast<size_t>(got));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return said.empty() ? "the child failed (status " + std::to_string(status) + ")" : said;
}

TEST(HotSpotDumper, ResolvesInEachInstalledJdkForEachCollector) {
  int jdks = 0;
  for (auto [home, jdk] : {std::pair{"/usr/lib/jvm/java-17-openjdk-amd64", 17},
                           std::pair{"/usr/lib/jvm/temurin-25-jdk-amd64", 25}}) {
    std::string library = std::string(home) + "/lib/server/libjvm.so";
    if (!std::filesystem::exists(library)) {
      std::printf("skipped: no %s\n", library.c_str());
      continue;
    }
    ++jdks;
    for (ForkHeapKind heap : {ForkHeapKind::kG1, ForkHeapKind::kParallel, ForkHeapKind::kSerial}) {
      EXPECT_EQ(resolve_in_child(library, jdk, heap), "") << library << " heap " << static_cast<int>(heap);
    }
  }
  if (jdks == 0) GTEST_SKIP() << "no JDK with a server libjvm.so installed";
}

TEST(HotSpotDumper, RefusesJdksNotTestedAndProcessesWithoutHotSpot) {
  std::string why;
  EXPECT_FALSE(find_hotspot_dumper(21, ForkHeapKind::kG1, &why).has_value());
  EXPECT_NE(why.find("JDK 21"), std::string::npos) << why;
  why.clear();
  // This test program has no libjvm.so loaded.
  EXPECT_FALSE(find_hotspot_dumper(17, ForkHeapKind::kG1, &why).has_value());
  EXPECT_NE(why.find("no libjvm.so"), std::string::npos) << why;
}

TEST(HotSpotDumper, ReadsTheChildsStatusLine) {
  DumpChildStatus ok = parse_dump_child_status("ok 123456\n");
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.private_bytes, 123456);
  DumpChildStatus failed = parse_dump_child_status("error No space left on device\n");
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.error, "No space left on device");
  DumpChildStatus silent = parse_dump_child_status("");
  EXPECT_FALSE(silent.ok);
  EXPECT_NE(silent.error.find("without saying"), std::string::npos);
  DumpChildStatus odd = parse_dump_child_status("okay\n");
  EXPECT_FALSE(odd.ok);
  EXPECT_NE(odd.error.find("okay"), std::string::npos);
  DumpChildStatus unknown = parse_dump_child_status("ok \n");
  EXPECT_TRUE(unknown.ok);
  EXPECT_EQ(unknown.private_bytes, -1);
}

}  // namespace
}  // namespace fasthprof
