// The 64-bit ID spaces of fasthprof. Every ID a record names is a number the agent assigns (never an
// address, never a bare table index), and the top byte says who assigned it, so IDs of different
// kinds can never collide:
//
//   63      56 55     48 47                                        0
//   +---------+---------+-------------------------------------------+
//   |  space  |            index within the space (from 1)          |
//   +---------+---------+-------------------------------------------+
//
//   0x00        ID 0: "none" (no source file, no parent group, a null reference). Never assigned.
//   0x01        UTF8 names (NameTable).
//   0x02        stack frames (FrameRegistry).
//   0x03        registry objects; bits 55..48 name the registry:
//                 0x01 java.lang.Class objects (ClassRegistry), 0x02 java.lang.Thread objects
//                 (ThreadRegistry), 0x03 class loader objects (the agent's ClassTracker). The agent tags those objects with these IDs, so a heap dump that
//                 meets the tag writes the same ID that LOAD CLASS / START THREAD used.
//   0x04        UTF8 thread names, one per START THREAD written (ProfileWriter): not interned, so
//               that the names of ended threads need not be kept (START THREAD alone names them).
//   0x05        UTF8 names of VM dumps (VmDumpRewriter): a JDK symbol ID that this output already
//               holds with another text (its address was reused after class unloading) gets one.
//   0x06        stack frames of VM dumps (VmDumpRewriter): the JDK numbers its frames 1, 2, ... in
//               every dump.
//   0x07..0x0F  free for registries added later.
//   0x10..0x1F  object tags set by allocation tracking (heap=sites|all, sample=).
//   0x20..0x2F  object tags set by heap dumps for objects nobody tagged before.
//   0x30..0x7F  free for later features.
//   0x80..0xFF  never used: an ID doubles as a JVMTI tag (a jlong), and tags stay positive.
//
// VM dumps (heap dumps written by HotSpot's own dumper, runtime/vm_dump/vm_dump_rewriter.h) are the one
// exception to "IDs are not addresses": inside such a dump, object and class IDs are the JDK's own
// addresses, which have top byte 0x00 and so can never be an ID of the spaces above. They are
// valid within their dump only (from the LOAD CLASS records after the previous HEAP DUMP END to the
// dump's own HEAP DUMP END); a later dump may use the same address for another object or class, and
// a class has one ID per VM dump. The JDK's symbol addresses name the UTF8 records of VM dumps too,
// but a name ID stays valid for the whole file: each is written once, and an address that comes
// back with another text gets a kVmDumpName ID instead. Serials of VM dumps (class, thread and
// trace serials) are renumbered from kFirstVmDumpSerial (hprof_format.h), far above the serials
// fasthprof assigns (classes from 100000, threads from 200001, traces from 300000), each kind with
// its own counter for the whole run.
#pragma once

#include <cstdint>

namespace fasthprof {

enum class IdSpace : uint8_t {
  kNone = 0x00,
  kName = 0x01,
  kFrame = 0x02,
  kRegistryObject = 0x03,
  kThreadName = 0x04,
  kVmDumpName = 0x05,
  kVmDumpFrame = 0x06,
  kFirstObjectTag = 0x10,
  kFirstAllocationTag = 0x10,
  kLastAllocationTag = 0x1F,
  kFirstHeapDumpTag = 0x20,
  kLastHeapDumpTag = 0x2F,
  kLastObjectTag = 0x7F,
};

// Sub-spaces of IdSpace::kRegistryObject (bits 55..48).
enum class RegistryObjectKind : uint8_t {
  kClass = 0x01,
  kThread = 0x02,
  kLoader = 0x03,
};

inline constexpr int kIdSpaceShift = 56;

inline constexpr uint64_t kIdIndexMask = (uint64_t{1} << kIdSpaceShift) - 1;
inline constexpr int kRegistryKindShift = 48;
inline constexpr uint64_t kRegistryIndexMask = (uint64_t{1} << kRegistryKindShift) - 1;

// The ID with the given space and index (index must fit in 56 bits and not be 0).
constexpr uint64_t make_id(IdSpace space, uint64_t index) {
  return (uint64_t{static_cast<uint8_t>(space)} << kIdSpaceShift) | (index & kIdIndexMask);
}

constexpr IdSpace id_space(uint64_t id) { return static_cast<IdSpace>(id >> kIdSpaceShift); }
constexpr uint64_t id_index(uint64_t id) { return id & kIdIndexMask; }

// The ID of registry object number index (from 1) of the given registry.
constexpr uint64_t make_registry_object_id(RegistryObjectKind kind, uint64_t index) {
  return make_id(IdSpace::kRegistryObject,
                 (uint64_t{static_cast<uint8_t>(kind)} << kRegistryKindShift) | (index & kRegistryIndexMask));
}

// The registry object index (from 1) of id, or 0 if id is not an object ID of that registry.
constexpr uint64_t registry_object_index(RegistryObjectKind kind, uint64_t id) {
  if (id_space(id) != IdSpace::kRegistryObject) return 0;
  if (((id & kIdIndexMask) >> kRegistryKindShift) != static_cast<uint8_t>(kind)) return 0;
  return id & kRegistryIndexMask;
}

static_assert(make_id(IdSpace::kName, 1) == 0x0100000000000001);
static_assert(make_registry_object_id(RegistryObjectKind::kThread, 5) == 0x0302000000000005);
static_assert(registry_object_index(RegistryObjectKind::kClass, 0x0301000000000007) == 7);
static_assert(registry_object_index(RegistryObjectKind::kThread, 0x0301000000000007) == 0);

}  // namespace fasthprof
