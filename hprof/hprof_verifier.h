// An independent checker of HPROF binary files: it reads the bytes the way jhat and the OpenJDK
// test-library parser do, and enforces what those readers (and docs/decisions.md "Binary format")
// require, stopping at the first violation with the byte offset where it sits. The framing of
// records and sub-records is the reader's (hprof_reader.h); the checks of what they say are here.
//
// It shares only the tag and type constants (and their names) of runtime/base/hprof_format.h with
// the writers, never their code, so that a bug in a writer cannot hide itself here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hprof_input.h"
#include "hprof_reader.h"

namespace fasthprof {

struct VerifyOptions {
  // Count instances and arrays per class name in every dump (DumpSummary::class_counts).
  bool count_classes = false;
  // Also enforce what only fasthprof's own files promise: every trace serial a record names was
  // defined by an earlier STACK TRACE; a class object is loaded by one LOAD CLASS; in a dump every
  // CLASS DUMP comes before its subclasses' and before its instances and arrays, and every
  // reference resolves to a record of the dump. In a VM dump (a JDK dump that fasthprof inserted:
  // its classes are JDK addresses, 8-byte IDs with top byte 0, loaded with serials from
  // kFirstVmDumpSerial) class IDs are scoped to the dump (loaded once from the previous HEAP DUMP
  // END to the dump's end), classes may come in any order and references may miss (the JDK's
  // own choices). Without it, a serial may be defined anywhere in the file
  // and classes may come in any order within their dump (the JDK's dumper writes LOAD CLASS records
  // before the STACK TRACE they name, and classes in no particular order).
  bool strict = false;
  // The input the bytes come from, if they are an HprofInput's: the pages each pass leaves behind
  // are released as it goes (HprofInput::release_before), so that memory does not grow with the file.
  HprofInput* input = nullptr;
};

// What one heap dump (HEAP DUMP, or HEAP DUMP SEGMENTs up to their HEAP DUMP END) holds.
struct DumpSummary {
  uint64_t offset = 0;  // of its first HEAP DUMP / HEAP DUMP SEGMENT record
  uint64_t segments = 0;
  uint64_t classes = 0;
  uint64_t instances = 0;
  uint64_t object_arrays = 0;
  uint64_t primitive_arrays = 0;
  uint64_t roots = 0;
  // References to IDs that no record of the dump defines (only without strict, or in a VM dump:
  // the JDK's dumper leaves out some objects that arrays of the VM's own still reference).
  uint64_t unresolved_references = 0;
  std::array<uint64_t, 256> sub_record_counts{};  // indexed by HeapTag value
  // Only with VerifyOptions::count_classes: (class name, instances + arrays of that class), largest
  // count first, then by name. Primitive arrays count under "int[]", "char[]", ...
  std::vector<std::pair<std::string, uint64_t>> class_counts;
};

struct VerifyResult {
  bool ok = false;
  std::string error;          // what is wrong; empty when ok
  uint64_t error_offset = 0;  // byte offset of the offending record, sub-record or field
  std::string version;        // header string without its NUL, e.g. "JAVA PROFILE 1.0.2"
  uint32_t id_size = 0;
  uint64_t timestamp_millis = 0;
  std::array<uint64_t, 256> record_counts{};      // indexed by RecordTag value
  std::array<uint64_t, 256> sub_record_counts{};  // over all dumps, indexed by HeapTag value
  std::vector<DumpSummary> dumps;                 // complete dumps, in file order
};

// Checks the HPROF binary file held in data[0, size). Every offset and length is 64-bit and
// bounds-checked, so any input (truncated, hostile, several GiB) is safe to pass. Allocates
// (hash tables of IDs, serials and names, proportional to what the file declares); never throws.
// On the first violation returns ok == false with error and error_offset set; the counts then
// cover what was read before it. Any thread may call it; it keeps no state between calls.
VerifyResult verify_hprof(const uint8_t* data, size_t size, const VerifyOptions& options);

// The success summary hprof-verify prints: header, record counts per tag, and per dump the segment,
// class, instance, array and root counts and sub-record counts per tag; with classes, also each
// dump's class_counts (needs a result from count_classes). Allocates the returned string.
std::string format_verify_summary(const VerifyResult& result, bool classes);

}  // namespace fasthprof
