#include "fork_dump/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace fasthprof {

namespace {

// The bytes [at, at + size) lie inside a file of file_size bytes (no overflow).
bool inside(uint64_t at, uint64_t size, uint64_t file_size) { return at <= file_size && size <= file_size - at; }

template <typename T>
T read_at(const uint8_t* data, uint64_t at) {
  T value;
  std::memcpy(&value, data + at, sizeof(T));
  return value;
}

}  // namespace

std::optional<ElfSymbols> ElfSymbols::open(const std::string& path, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st{};
  void* mapped = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    mapped = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  if (mapped == MAP_FAILED) {
    *error = "cannot map " + path;
    return std::nullopt;
  }
  ElfSymbols symbols;
  symbols.data_ = static_cast<const uint8_t*>(mapped);
  symbols.size_ = static_cast<size_t>(st.st_size);
  const uint8_t* data = symbols.data_;
  uint64_t size = symbols.size_;
  auto fail = [&](const std::string& why) {
    *error = path + ": " + why;
    return std::nullopt;
  };
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(data, ELFMAG, SELFMAG) != 0) return fail("not an ELF file");
  if (data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB) return fail("not a 64-bit little-endian ELF file");
  auto header = read_at<Elf64_Ehdr>(data, 0);
  if (header.e_shentsize != sizeof(Elf64_Shdr) ||
      !inside(header.e_shoff, uint64_t{header.e_shnum} * sizeof(Elf64_Shdr), size)) {
    return fail("its section headers lie outside the file");
  }
  // .symtab when there is one, else .dynsym; each names its string table by sh_link.
  for (uint32_t wanted : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (uint16_t i = 0; i < header.e_shnum; ++i) {
      auto section = read_at<Elf64_Shdr>(data, header.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr));
      if (section.sh_type != wanted) continue;
      if (section.sh_entsize != sizeof(Elf64_Sym) || !inside(section.sh_offset, section.sh_size, size) ||
          section.sh_link >= header.e_shnum) {
        return fail("its symbol table lies outside the file");
      }
      auto names = read_at<Elf64_Shdr>(data, header.e_shoff + uint64_t{section.sh_link} * sizeof(Elf64_Shdr));
      if (!inside(names.sh_offset, names.sh_size, size)) return fail("its symbol names lie outside the file");
      symbols.symbols_at_ = section.sh_offset;
      symbols.symbol_count_ = static_cast<size_t>(section.sh_size / sizeof(Elf64_Sym));
      symbols.names_at_ = names.sh_offset;
      symbols.names_size_ = names.sh_size;
      symbols.table_ = wanted == SHT_SYMTAB ? ".symtab" : ".dynsym";
      return symbols;
    }
  }
  return fail("no symbol table");
}

ElfSymbols::ElfSymbols(ElfSymbols&& other) noexcept
    : data_(other.data_),
      size_(other.size_),
      symbols_at_(other.symbols_at_),
      symbol_count_(other.symbol_count_),
      names_at_(other.names_at_),
      names_size_(other.names_size_),
      table_(other.table_) {
  other.data_ = nullptr;
}

ElfSymbols::~ElfSymbols() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

std::optional<ElfSymbol> ElfSymbols::find(std::string_view name) const {
  if (data_ == nullptr) return std::nullopt;
  const char* names = reinterpret_cast<const char*>(data_ + names_at_);
  for (size_t i = 0; i < symbol_count_; ++i) {
    auto symbol = read_at<Elf64_Sym>(data_, symbols_at_ + i * sizeof(Elf64_Sym));
    unsigned type = ELF64_ST_TYPE(symbol.st_info);
    if (symbol.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_OBJECT)) continue;
    // The name must end inside the string table: a NUL right after name.size() bytes.
    if (symbol.st_name >= names_size_ || names_size_ - symbol.st_name <= name.size()) continue;
    if (names[symbol.st_name + name.size()] != '\0' || std::memcmp(names + symbol.st_name, name.data(), name.size()) != 0) {
      continue;
    }
    return ElfSymbol{symbol.st_value, symbol.st_size};
  }
  return std::nullopt;
}

namespace {

struct ObjectSearch {
  std::string_view file_name;
  std::optional<LoadedObject> found;
};

int visit_object(struct dl_phdr_info* info, size_t, void* context) {
  auto* search = static_cast<ObjectSearch*>(context);
  std::string_view path = info->dlpi_name == nullptr ? std::string_view() : std::string_view(info->dlpi_name);
  if (search->file_name.empty()) {
    // The main program comes first, with an empty name.
    if (!path.empty()) return 0;
    char exe[4096];
    ssize_t length = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (length <= 0) return 1;
    search->found = LoadedObject{std::string(exe, static_cast<size_t>(length)), info->dlpi_addr};
    return 1;
  }
  if (path.size() <= search->file_name.size() || path[path.size() - search->file_name.size() - 1] != '/' ||
      path.substr(path.size() - search->file_name.size()) != search->file_name) {
    return 0;
  }
  search->found = LoadedObject{std::string(path), info->dlpi_addr};
  return 1;
}

}  // namespace

std::optional<LoadedObject> loaded_object(std::string_view file_name) {
  ObjectSearch search{file_name, std::nullopt};
  dl_iterate_phdr(&visit_object, &search);
  return search.found;
}

}  // namespace fasthprof
