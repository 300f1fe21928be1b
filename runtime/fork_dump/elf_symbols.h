// Symbols of an ELF shared object as the file on disk has them: the full symbol table (.symtab)
// where the object keeps one, else the dynamic one (.dynsym). HotSpot's libjvm.so keeps .symtab
// in the JDK builds fasthprof is tested on (Debian's 17, Temurin's 25), which names the VM's
// internal functions that no export reaches; a dumper that needs one looks it up here, checks the
// JDK build against those it was tested on, and falls back when either fails: it never guesses
// an address.
//
//   file: ELF header -> section headers -> .symtab (Elf64_Sym[]) -> its .strtab (names)
//   memory: symbol value + the object's load base (loaded_object(), from the dynamic linker)
//
// The file is mapped read-only for the ElfSymbols' life; every offset and size read from it is
// checked against the file's size first, so a truncated or hostile file gets an error, never a
// read outside the mapping. Threads: any; one ElfSymbols per thread or read-only sharing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fasthprof {

struct ElfSymbol {
  uint64_t value = 0;  // relative to the object's load base
  uint64_t size = 0;
};

class ElfSymbols {
 public:
  // The symbol tables of the 64-bit little-endian ELF file at path; nullopt with *error otherwise.
  static std::optional<ElfSymbols> open(const std::string& path, std::string* error);

  ElfSymbols(ElfSymbols&& other) noexcept;
  ElfSymbols& operator=(ElfSymbols&&) = delete;
  ElfSymbols(const ElfSymbols&) = delete;
  ~ElfSymbols();

  // A defined function or object of that (mangled) name; nullopt when the table has none.
  std::optional<ElfSymbol> find(std::string_view name) const;
  // The table the symbols came from: ".symtab" or ".dynsym".
  std::string_view table() const { return table_; }
  size_t symbol_count() const { return symbol_count_; }

 private:
  ElfSymbols() = default;

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  uint64_t symbols_at_ = 0;  // offset of the Elf64_Sym array
  size_t symbol_count_ = 0;
  uint64_t names_at_ = 0;    // offset and size of its string table
  uint64_t names_size_ = 0;
  std::string_view table_;
};

// A shared object loaded in this process: its path as the dynamic linker opened it and its load
// base. The first whose path ends with "/" + file_name (file_name "": the main program, with the
// path of /proc/self/exe). nullopt when none is loaded.
struct LoadedObject {
  std::string path;
  uint64_t base = 0;
};
std::optional<LoadedObject> loaded_object(std::string_view file_name);

}  // namespace fasthprof
