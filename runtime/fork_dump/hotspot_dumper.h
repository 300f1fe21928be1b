// HotSpot's own heap dumper (the code `jcmd GC.heap_dump` runs), called in the child of a fork
// made on the VM thread at a safepoint (agent/heap/fork_heap_dump.h): the child is a frozen copy
// of the heap in which only the VM thread lives, and it writes the dump while the program runs on.
//
// Everything is reached through libjvm.so's symbol table (elf_symbols.h), by mangled name, so
// that a symbol found also has the parameter types the call passes:
//
//   HeapDumper::dump(const char*, outputStream*, int, bool)            JDK 17
//   HeapDumper::dump(const char*, outputStream*, int, bool, unsigned)  JDK 25 (one dumper thread)
//   HeapDumper::~HeapDumper(), HeapDumper::error_as_C_string() const
//   ThreadCritical (17) / ChunkPoolLocker (25): the lock of the VM's arena chunk pool, which the
//     dumper takes; held by the VM thread across fork() and let go on both sides, so that the
//     child never finds it held by a thread it does not have
//   VMThread::_cur_vm_operation (25): the dumper runs as a nested VM operation there, refused
//     under the heap walk's operation; the child clears it
//   LogEvents: the VM's event log takes a lock another thread may have held at the fork; off in
//     the child
//   the heap's safepoint_workers() vtable slot (17, G1 and Parallel): the dumper would hand its
//     work to GC worker threads that do not exist in the child; the child's slot returns none,
//     so the VM thread dumps alone (as on JDK 25 with one dumper thread)
//
// A HeapDumper object is all zero for "no GC before the dump, not for an OutOfMemoryError, no
// error, timer stopped": the child makes one in zeroed storage, whatever the order of its fields.
// Any symbol missing, or a JDK other than the tested feature releases (17, 25): nothing is
// resolved and the caller falls back, saying why. Never a guessed address.
//
// Threads: find_hotspot_dumper anywhere (it reads libjvm.so's file); the rest on the VM thread
// (hold/release) and in the child (run_dump_child), which calls only system calls and HotSpot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fasthprof {

// The collector's heap class, whose worker gang the child must bypass on JDK 17.
enum class ForkHeapKind { kSerial, kParallel, kG1 };

struct HotSpotDumper {
  int jdk = 0;  // 17 or 25
  using Dump17 = int (*)(void* self, const char* path, void* out, int compression, bool overwrite);
  using Dump25 = int (*)(void* self, const char* path, void* out, int compression, bool overwrite,
                         unsigned threads);
  Dump17 dump17 = nullptr;
  Dump25 dump25 = nullptr;
  void (*destroy)(void* self) = nullptr;
  const char* (*error_text)(const void* self) = nullptr;
  void (*lock)(void* self) = nullptr;    // ThreadCritical / ChunkPoolLocker constructor
  void (*unlock)(void* self) = nullptr;  // and destructor
  void** current_operation = nullptr;    // JDK 25: VMThread::_cur_vm_operation
  bool* log_events = nullptr;
  void** workers_slot = nullptr;         // JDK 17 G1/Parallel: the vtable slot of safepoint_workers()
  std::string library;                   // libjvm.so's path, for messages
};

// Resolves the dumper in the libjvm.so loaded in this process for JDK `jdk` and the given heap.
// nullopt with *why (one clause, for "cannot dump by fork: <why>") otherwise.
std::optional<HotSpotDumper> find_hotspot_dumper(int jdk, ForkHeapKind heap, std::string* why);

// The lock held across fork() (hotspot_dumper.h above): storage for the lock object.
struct alignas(16) HotSpotLockStorage {
  unsigned char bytes[64] = {};
};

// What the child needs; all of it made before the fork.
struct DumpChildPlan {
  const HotSpotDumper* dumper = nullptr;
  const char* path = nullptr;     // where HotSpot writes the dump (the parent's pipe)
  int status_fd = -1;             // the child's one line of outcome goes there
  uint64_t watchdog_ms = 0;       // the child is killed (SIGKILL) after this long
  HotSpotLockStorage* lock = nullptr;  // held by the VM thread at the fork: let go first
};

// The child's whole life: made safe (fork_child.h), the lock let go, the VM's state arranged as
// above, HotSpot's dumper run into plan.path, then one status line on plan.status_fd,
//   "ok <private bytes>\n"  or  "error <HotSpot's or the setup's message>\n",
// and _exit (0 on success). Never returns; runs no Java and never returns into the VM.
[[noreturn]] void run_dump_child(const DumpChildPlan& plan);

// The status line's meaning, in the parent.
struct DumpChildStatus {
  bool ok = false;
  int64_t private_bytes = -1;  // the child's private memory at the end of the dump (-1: unknown)
  std::string error;           // why it failed (ok false)
};
DumpChildStatus parse_dump_child_status(const std::string& text);

}  // namespace fasthprof
