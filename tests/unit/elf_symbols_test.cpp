// ElfSymbols (runtime/fork_dump/elf_symbols.h): a function of this test program found by name at
// the address it has in memory (load base + value), HotSpot's internal functions found in the
// libjvm.so of each JDK installed, and files that are not, or no longer, whole ELF objects refused
// with a message.
#include "fork_dump/elf_symbols.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// Outside any namespace and not inlined, so that its mangled name is plain and it has an address.
extern "C" __attribute__((noinline)) int fasthprof_elf_symbols_probe(int x) { return x * 7 + 1; }

namespace fasthprof {
namespace {

std::string scratch_file(const std::string& name, const std::string& bytes) {
  std::string path = std::filesystem::temp_directory_path() / ("fasthprof-elf-" + std::to_string(getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(ElfSymbols, FindsThisProgramsFunctionWhereItIsInMemory) {
  std::optional<LoadedObject> program = loaded_object("");
  ASSERT_TRUE(program.has_value());
  std::string error;
  std::optional<ElfSymbols> symbols = ElfSymbols::open(program->path, &error);
  ASSERT_TRUE(symbols.has_value()) << error;
  std::optional<ElfSymbol> probe = symbols->find("fasthprof_elf_symbols_probe");
  ASSERT_TRUE(probe.has_value()) << "in " << symbols->table();
  auto address = reinterpret_cast<uint64_t>(&fasthprof_elf_symbols_probe);
  EXPECT_EQ(program->base + probe->value, address);
  EXPECT_GT(probe->size, 0u);
  EXPECT_FALSE(symbols->find("fasthprof_elf_symbols_probe_").has_value());
  EXPECT_FALSE(symbols->find("fasthprof_elf_symbols_prob").has_value());
  EXPECT_FALSE(symbols->find("").has_value());
}

TEST(ElfSymbols, FindsLoadedSharedObjects) {
  std::optional<LoadedObject> libc = loaded_object("libc.so.6");
  ASSERT_TRUE(libc.has_value());
  EXPECT_NE(libc->base, 0u);
  EXPECT_FALSE(loaded_object("libfasthprof-no-such-object.so").has_value());
}

TEST(ElfSymbols, FindsHotSpotsInternalsInEachInstalledJdk) {
  int jdks = 0;
  for (const char* home : {"/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64"}) {
    std::string path = std::string(home) + "/lib/server/libjvm.so";
    if (!std::filesystem::exists(path)) {
      std::printf("skipped: no %s\n", path.c_str());
      continue;
    }
    ++jdks;
    std::string error;
    std::optional<ElfSymbols> symbols = ElfSymbols::open(path, &error);
    ASSERT_TRUE(symbols.has_value()) << error;
    EXPECT_EQ(symbols->table(), ".symtab") << path;
    // A local (not exported) function and an exported one.
    EXPECT_TRUE(symbols->find("_ZN10HeapDumperD1Ev").has_value()) << path;
    EXPECT_TRUE(symbols->find("JNI_CreateJavaVM").has_value()) << path;
  }
  if (jdks == 0) GTEST_SKIP() << "no JDK with a server libjvm.so installed";
}

TEST(ElfSymbols, RefusesWhatIsNotAWholeElfFile) {
  std::string error;
  EXPECT_FALSE(ElfSymbols::open("/nonexistent/libjvm.so", &error).has_value());
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;

  std::string text = scratch_file("text", "just some text, long enough to be read as a header of sixty-four bytes\n");
  EXPECT_FALSE(ElfSymbols::open(text, &error).has_value());
  EXPECT_NE(error.find("not an ELF file"), std::string::npos) << error;

  std::string empty = scratch_file("empty", "");
  EXPECT_FALSE(ElfSymbols::open(empty, &error).has_value());

  // A real object cut short: its section headers (at the end) are gone.
  std::optional<LoadedObject> program = loaded_object("");
  ASSERT_TRUE(program.has_value());
  std::string whole = read_bytes(program->path);
  std::string cut = scratch_file("cut", whole.substr(0, whole.size() / 2));
  EXPECT_FALSE(ElfSymbols::open(cut, &error).has_value());
  EXPECT_NE(error.find("outside the file"), std::string::npos) << error;

  // Every byte of the header and the section table's start flipped in turn: never a crash.
  for (size_t at = 0; at < 64; ++at) {
    std::string bent = whole.substr(0, 1 << 16);
    bent[at] = static_cast<char>(bent[at] ^ 0xff);
    std::string path = scratch_file("bent", bent);
    std::optional<ElfSymbols> symbols = ElfSymbols::open(path, &error);
    if (symbols) symbols->find("fasthprof_elf_symbols_probe");
  }
  for (const char* name : {"text", "empty", "cut", "bent"}) {
    std::filesystem::remove(std::filesystem::temp_directory_path() / ("fasthprof-elf-" + std::to_string(getpid()) + "-" + name));
  }
}

}  // namespace
}  // namespace fasthprof
