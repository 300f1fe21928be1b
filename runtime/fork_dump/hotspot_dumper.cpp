#include "fork_dump/hotspot_dumper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "base/fd_io.h"
#include "fork_dump/elf_symbols.h"
#include "fork_dump/fork_child.h"

namespace fasthprof {

namespace {

// What the child's patched safepoint_workers() slot points at: "no worker gang", for any heap.
void* no_safepoint_workers(void* /*heap*/) { return nullptr; }

struct Resolver {
  const ElfSymbols& symbols;
  uint64_t base;
  std::string missing;  // the first symbol not found

  template <typename T>
  T get(const char* name) {
    std::optional<ElfSymbol> symbol = symbols.find(name);
    if (!symbol) {
      if (missing.empty()) missing = name;
      return nullptr;
    }
    return reinterpret_cast<T>(base + symbol->value);
  }
};

// The one slot of the vtable `table` (mangled name) that holds `function`; null when there is not
// exactly one.
void** vtable_slot(const ElfSymbols& symbols, uint64_t base, const char* table, const char* function,
                   std::string* why) {
  std::optional<ElfSymbol> vtable = symbols.find(table);
  std::optional<ElfSymbol> target = symbols.find(function);
  if (!vtable || !target) {
    *why = std::string("libjvm.so has no ") + (vtable ? function : table);
    return nullptr;
  }
  auto** slots = reinterpret_cast<void**>(base + vtable->value);
  void* wanted = reinterpret_cast<void*>(base + target->value);
  void** found = nullptr;
  int matches = 0;
  for (uint64_t i = 0; i < vtable->size / sizeof(void*); ++i) {
    if (slots[i] == wanted) {
      found = &slots[i];
      ++matches;
    }
  }
  if (matches != 1) {
    *why = std::string(table) + " holds " + function + " " + std::to_string(matches) + " times, not once";
    return nullptr;
  }
  return found;
}

char* append(char* at, const char* end, const char* text) {
  while (*text != '\0' && at < end) *at++ = *text++;
  return at;
}

char* append_decimal(char* at, const char* end, uint64_t value) {
  char digits[24];
  char* first = digits + sizeof(digits);
  *--first = '\0';
  do {
    *--first = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  return append(at, end, first);
}

// One status line and _exit: async-signal-safe.
[[noreturn]] void finish_child(int status_fd, const char* word, const char* text, int64_t bytes, int code) {
  char line[1024];
  char* end = line + sizeof(line) - 1;
  char* at = append(line, end, word);
  at = append(at, end, " ");
  if (text != nullptr) {
    // One line: a message's own line breaks become spaces.
    for (const char* c = text; *c != '\0' && at < end; ++c) *at++ = (*c == '\n' || *c == '\r') ? ' ' : *c;
  } else {
    at = append_decimal(at, end, static_cast<uint64_t>(bytes < 0 ? 0 : bytes));
  }
  *at++ = '\n';
  write_all(status_fd, line, static_cast<size_t>(at - line));
  ::_exit(code);
}

// The child keeps only the synchronous signals, at their default action: a crash ends it with no
// report of the VM's (no hs_err file, no core), and nothing sent to the process group stops it.
void quiet_child() {
  struct rlimit none{};
  ::setrlimit(RLIMIT_CORE, &none);
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
    ::close(null_fd);
  }
  const int crashes[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
  sigset_t blocked;
  sigfillset(&blocked);
  struct sigaction plain{};
  plain.sa_handler = SIG_DFL;
  sigemptyset(&plain.sa_mask);
  for (int signal : crashes) {
    sigdelset(&blocked, signal);
    ::sigaction(signal, &plain, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &blocked, nullptr);
}

}  // namespace

std::optional<HotSpotDumper> find_hotspot_dumper(int jdk, ForkHeapKind heap, std::string* why) {
  if (jdk != 17 && jdk != 25) {
    *why = "JDK " + std::to_string(jdk) + " (dumps by fork are built for JDK 17 and 25, the releases they are tested on)";
    return std::nullopt;
  }
  std::optional<LoadedObject> jvm = loaded_object("libjvm.so");
  if (!jvm) {
    *why = "no libjvm.so is loaded (not HotSpot?)";
    return std::nullopt;
  }
  std::string error;
  std::optional<ElfSymbols> symbols = ElfSymbols::open(jvm->path, &error);
  if (!symbols) {
    *why = "cannot read " + jvm->path + ": " + error;
    return std::nullopt;
  }
  if (symbols->table() != ".symtab") {
    *why = jvm->path + " has no full symbol table (stripped)";
    return std::nullopt;
  }
  Resolver resolve{*symbols, jvm->base, {}};
  HotSpotDumper dumper;
  dumper.jdk = jdk;
  dumper.library = jvm->path;
  if (jdk == 17) {
    dumper.dump17 = resolve.get<HotSpotDumper::Dump17>("_ZN10HeapDumper4dumpEPKcP12outputStreamib");
    dumper.lock = resolve.get<void (*)(void*)>("_ZN14ThreadCriticalC1Ev");
    dumper.unlock = resolve.get<void (*)(void*)>("_ZN14ThreadCriticalD1Ev");
  } else {
    dumper.dump25 = resolve.get<HotSpotDumper::Dump25>("_ZN10HeapDumper4dumpEPKcP12outputStreamibj");
    dumper.lock = resolve.get<void (*)(void*)>("_ZN15ChunkPoolLockerC1Ev");
    dumper.unlock = resolve.get<void (*)(void*)>("_ZN15ChunkPoolLockerD1Ev");
    dumper.current_operation = resolve.get<void**>("_ZN8VMThread17_cur_vm_operationE");
  }
  dumper.destroy = resolve.get<void (*)(void*)>("_ZN10HeapDumperD1Ev");
  dumper.error_text = resolve.get<const char* (*)(const void*)>("_ZNK10HeapDumper17error_as_C_stringEv");
  dumper.log_events = resolve.get<bool*>("LogEvents");
  if (!resolve.missing.empty()) {
    *why = jvm->path + " has no symbol " + resolve.missing;
    return std::nullopt;
  }
  if (jdk == 17 && heap != ForkHeapKind::kSerial) {
    bool g1 = heap == ForkHeapKind::kG1;
    dumper.workers_slot = vtable_slot(*symbols, jvm->base, g1 ? "_ZTV15G1CollectedHeap" : "_ZTV20ParallelScavengeHeap",
                                      g1 ? "_ZN15G1CollectedHeap17safepoint_workersEv"
                                         : "_ZN20ParallelScavengeHeap17safepoint_workersEv",
                                      why);
    if (dumper.workers_slot == nullptr) return std::nullopt;
  }
  return dumper;
}

void run_dump_child(const DumpChildPlan& plan) {
  const HotSpotDumper& dumper = *plan.dumper;
  // The lock was held at the fork by this very thread: the child's copy is consistent; let it go.
  dumper.unlock(plan.lock->bytes);
  const char* failure = nullptr;
  if (!prepare_fork_child(plan.watchdog_ms, &failure)) finish_child(plan.status_fd, "error", failure, 0, 2);
  // Killed with the program if the program ends first.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  quiet_child();
  *dumper.log_events = false;
  if (dumper.workers_slot != nullptr) {
    long page = ::sysconf(_SC_PAGESIZE);
    auto at = reinterpret_cast<uintptr_t>(dumper.workers_slot) & ~static_cast<uintptr_t>(page - 1);
    if (::mprotect(reinterpret_cast<void*>(at), static_cast<size_t>(page), PROT_READ | PROT_WRITE) != 0) {
      finish_child(plan.status_fd, "error", "cannot make the heap's vtable writable in the child", 0, 2);
    }
    *dumper.workers_slot = reinterpret_cast<void*>(&no_safepoint_workers);
  }
  if (dumper.current_operation != nullptr) *dumper.current_operation = nullptr;
  alignas(16) unsigned char heap_dumper[512] = {};
  int result = dumper.jdk == 17 ? dumper.dump17(heap_dumper, plan.path, nullptr, -1, true)
                                : dumper.dump25(heap_dumper, plan.path, nullptr, -1, true, 1);
  if (result != 0) {
    const char* text = dumper.error_text(heap_dumper);
    finish_child(plan.status_fd, "error", text != nullptr ? text : "HotSpot's dumper failed without a message", 0, 3);
  }
  finish_child(plan.status_fd, "ok", nullptr, private_memory_bytes(0), 0);
}

DumpChildStatus parse_dump_child_status(const std::string& text) {
  DumpChildStatus status;
  std::string line = text.substr(0, text.find('\n'));
  if (line.rfind("ok ", 0) == 0) {
    status.ok = true;
    char* end = nullptr;
    long long bytes = std::strtoll(line.c_str() + 3, &end, 10);
    if (end != line.c_str() + 3) status.private_bytes = bytes;
  } else if (line.rfind("error ", 0) == 0) {
    status.error = line.substr(6);
  } else {
    status.error = line.empty() ? "the child ended without saying how" : "the child said: " + line;
  }
  return status;
}

}  // namespace fasthprof
