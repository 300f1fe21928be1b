// The HPROF binary format (seed: hprof-binary-format.txt), as fasthprof writes it:
// "JAVA PROFILE 1.0.2", identifier size 8, big-endian, heap dumps as HEAP DUMP SEGMENTs
// closed by one HEAP DUMP END per dump.
//
//   file    := header record*
//   header  := "JAVA PROFILE 1.0.2" NUL, u4 id size (8), u8 milliseconds since the epoch
//   record  := u1 tag, u4 microseconds since the header's time stamp, u4 body length, body
#pragma once

#include <cstddef>
#include <cstdint>

namespace fasthprof {

inline constexpr char kBinaryHeaderVersion[] = "JAVA PROFILE 1.0.2";
inline constexpr char kTextHeaderVersion[] = "JAVA PROFILE 1.0.1";
inline constexpr uint32_t kIdSize = 8;
inline constexpr size_t kRecordHeaderSize = 1 + 4 + 4;

// Serial-number bases kept from the original agent.
inline constexpr uint32_t kFirstClassSerial = 100000;
inline constexpr uint32_t kFirstThreadSerial = 200000;
inline constexpr uint32_t kFirstTraceSerial = 300000;
// Serials of heap dumps written by the JVM's own dumper (VM dumps, runtime/vm_dump/vm_dump_rewriter.h):
// class, thread and trace serials from here, far above the serials fasthprof assigns itself.
inline constexpr uint32_t kFirstVmDumpSerial = 0x40000000;

// Top-level record tags.
enum class RecordTag : uint8_t {
  kUtf8 = 0x01,
  kLoadClass = 0x02,
  kUnloadClass = 0x03,
  kStackFrame = 0x04,
  kStackTrace = 0x05,
  kAllocSites = 0x06,
  kHeapSummary = 0x07,
  kStartThread = 0x0A,
  kEndThread = 0x0B,
  kHeapDump = 0x0C,
  kCpuSamples = 0x0D,
  kControlSettings = 0x0E,
  kHeapDumpSegment = 0x1C,
  kHeapDumpEnd = 0x2C,
};

// Sub-record tags inside HEAP DUMP / HEAP DUMP SEGMENT.
enum class HeapTag : uint8_t {
  kRootUnknown = 0xFF,
  kRootJniGlobal = 0x01,
  kRootJniLocal = 0x02,
  kRootJavaFrame = 0x03,
  kRootNativeStack = 0x04,
  kRootStickyClass = 0x05,
  kRootThreadBlock = 0x06,
  kRootMonitorUsed = 0x07,
  kRootThreadObject = 0x08,
  kClassDump = 0x20,
  kInstanceDump = 0x21,
  kObjectArrayDump = 0x22,
  kPrimitiveArrayDump = 0x23,
};

// "Basic Type" codes used by field, constant-pool and array records.
enum class BasicType : uint8_t {
  kObject = 2,
  kBoolean = 4,
  kChar = 5,
  kFloat = 6,
  kDouble = 7,
  kByte = 8,
  kShort = 9,
  kInt = 10,
  kLong = 11,
};

// Size in bytes of a value of the given type in a record (IDs are kIdSize); 0 for an unknown code.
constexpr size_t basic_type_size(BasicType type) {
  switch (type) {
    case BasicType::kObject: return kIdSize;
    case BasicType::kBoolean:
    case BasicType::kByte: return 1;
    case BasicType::kChar:
    case BasicType::kShort: return 2;
    case BasicType::kFloat:
    case BasicType::kInt: return 4;
    case BasicType::kDouble:
    case BasicType::kLong: return 8;
  }
  return 0;
}

// The basic type of a value whose JVM signature starts with letter: Z B C S I J F D give their
// primitive type; L (a class), [ (an array) and anything else give kObject, a reference. With
// basic_type_size, the size a record gives such a value.
constexpr BasicType basic_type_of_signature(char letter) {
  switch (letter) {
    case 'Z': return BasicType::kBoolean;
    case 'B': return BasicType::kByte;
    case 'C': return BasicType::kChar;
    case 'S': return BasicType::kShort;
    case 'I': return BasicType::kInt;
    case 'J': return BasicType::kLong;
    case 'F': return BasicType::kFloat;
    case 'D': return BasicType::kDouble;
    default: return BasicType::kObject;
  }
}

// CONTROL SETTINGS flag bits.
inline constexpr uint32_t kControlAllocTraces = 0x1;
inline constexpr uint32_t kControlCpuSampling = 0x2;
// fasthprof's: heap=sites with live=n (objects not followed after allocation: every live count of
// ALLOC SITES and HEAP SUMMARY repeats the allocated one). Readers that know only the two bits above
// ignore it.
inline constexpr uint32_t kControlNoLiveCounts = 0x4;

// ALLOC SITES flag bits.
inline constexpr uint16_t kSitesIncremental = 0x1;
inline constexpr uint16_t kSitesSortedByAllocation = 0x2;
inline constexpr uint16_t kSitesForceGc = 0x4;

// The HPROF name of a top-level record tag ("HEAP DUMP SEGMENT"), null for a tag not in the format.
constexpr const char* record_tag_name(uint8_t tag) {
  switch (static_cast<RecordTag>(tag)) {
    case RecordTag::kUtf8: return "UTF8";
    case RecordTag::kLoadClass: return "LOAD CLASS";
    case RecordTag::kUnloadClass: return "UNLOAD CLASS";
    case RecordTag::kStackFrame: return "STACK FRAME";
    case RecordTag::kStackTrace: return "STACK TRACE";
    case RecordTag::kAllocSites: return "ALLOC SITES";
    case RecordTag::kHeapSummary: return "HEAP SUMMARY";
    case RecordTag::kStartThread: return "START THREAD";
    case RecordTag::kEndThread: return "END THREAD";
    case RecordTag::kHeapDump: return "HEAP DUMP";
    case RecordTag::kCpuSamples: return "CPU SAMPLES";
    case RecordTag::kControlSettings: return "CONTROL SETTINGS";
    case RecordTag::kHeapDumpSegment: return "HEAP DUMP SEGMENT";
    case RecordTag::kHeapDumpEnd: return "HEAP DUMP END";
  }
  return nullptr;
}

// The HPROF name of a heap-dump sub-record tag ("ROOT JAVA FRAME"), null for a tag not in the format.
constexpr const char* heap_tag_name(uint8_t tag) {
  switch (static_cast<HeapTag>(tag)) {
    case HeapTag::kRootUnknown: return "ROOT UNKNOWN";
    case HeapTag::kRootJniGlobal: return "ROOT JNI GLOBAL";
    case HeapTag::kRootJniLocal: return "ROOT JNI LOCAL";
    case HeapTag::kRootJavaFrame: return "ROOT JAVA FRAME";
    case HeapTag::kRootNativeStack: return "ROOT NATIVE STACK";
    case HeapTag::kRootStickyClass: return "ROOT STICKY CLASS";
    case HeapTag::kRootThreadBlock: return "ROOT THREAD BLOCK";
    case HeapTag::kRootMonitorUsed: return "ROOT MONITOR USED";
    case HeapTag::kRootThreadObject: return "ROOT THREAD OBJECT";
    case HeapTag::kClassDump: return "CLASS DUMP";
    case HeapTag::kInstanceDump: return "INSTANCE DUMP";
    case HeapTag::kObjectArrayDump: return "OBJECT ARRAY DUMP";
    case HeapTag::kPrimitiveArrayDump: return "PRIMITIVE ARRAY DUMP";
  }
  return nullptr;
}

}  // namespace fasthprof
