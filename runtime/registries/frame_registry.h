// Stack frames: one frame ID per distinct (method, location), the FRAME record's contents, and the
// method information behind them (names, source file, class serial, line table), resolved once per
// method through an injected MethodResolver. The agent passes plain numbers: a jmethodID becomes a
// uint64_t, a jlocation an int64_t.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/flat_map.h"
#include "base/ids.h"
#include "base/memory.h"
#include "registries/name_table.h"

namespace fasthprof {

// FRAME line for "no line information" (lineno=n, unknown locations); the text output prints it
// as "Unknown line".
inline constexpr int32_t kUnknownLine = -1;
// FRAME line of a native method's frame, as the binary format defines it and HotSpot's own heap
// dumper writes it (the original agent wrote -1, since JVMPI's marker did not survive into its
// JVMTI version); the text output prints "Native method".
inline constexpr int32_t kNativeMethodLine = -3;

struct LineNumberEntry {
  int64_t start_location = 0;
  int32_t line = 0;
};

// What names a method that cannot be resolved (FrameRegistry::method_index): the frame records
// and the text output name these rather than nothing.
inline constexpr const char* kUnknownMethodName = "<unknown method>";
inline constexpr const char* kUnknownMethodSignature = "()V";
inline constexpr const char* kUnknownClassSignature = "L<unknown class>;";

struct MethodInfo {
  std::string class_signature;  // JVM form, "Ljava/lang/String;"
  std::string name;
  std::string signature;        // JVM descriptor, "(I)V"
  std::string source_file;      // empty when absent
  uint32_t class_serial = 0;
  std::vector<LineNumberEntry> line_table;  // in any order; empty when the class has none
  bool native_method = false;               // its frames' line is kNativeMethodLine
};

// Resolves a method for the registry. The agent implements it with JVMTI (GetMethodName,
// GetMethodDeclaringClass, GetSourceFileName, GetLineNumberTable, the ClassRegistry for the serial).
class MethodResolver {
 public:
  virtual ~MethodResolver() = default;
  // Fills *out for method. Returns false when the method cannot be resolved; the registry then
  // names it kUnknownMethodName of kUnknownClassSignature, without lines.
  virtual bool resolve_method(uint64_t method, MethodInfo* out) = 0;
};

struct FrameRef {
  uint64_t frame_id = 0;  // IdSpace::kFrame
  bool is_new = false;    // first sight of (method, location) since construction
};

struct FrameView {
  uint64_t frame_id = 0;
  uint64_t method = 0;
  int64_t location = 0;
  int32_t line = kUnknownLine;
  const MethodInfo* method_info = nullptr;  // never null for a found frame
  std::string_view class_name;              // Java form, "java.lang.String"
  bool written = false;                     // FRAME record already written to this file
};

// What the caller writes as a FRAME record, preceded by a UTF8 record for each name whose is_new
// is set. A name whose text is empty has id 0 (no name) and is never new.
struct FrameRecord {
  bool needed = false;  // false: unknown frame, or its FRAME is already in this file
  uint64_t frame_id = 0;
  NameRef method_name;
  NameRef method_signature;
  NameRef source_file;
  uint32_t class_serial = 0;
  int32_t line = kUnknownLine;
};

// Not thread-safe: the writer thread alone owns it. Pointers inside a FrameView stay valid for the
// registry's lifetime.
class FrameRegistry {
 public:
  // resolver must outlive the registry; nullptr makes every method unknown. line_numbers = false is lineno=n: every line is
  // kUnknownLine, but frames still differ by location as in the original.
  explicit FrameRegistry(MethodResolver* resolver, bool line_numbers = true);
  FrameRegistry(const FrameRegistry&) = delete;
  FrameRegistry& operator=(const FrameRegistry&) = delete;

  // The frame ID of (method, location). The first frame of a method calls the resolver once (so
  // call it while the method's class is still loaded); the line is computed when the frame is
  // created. Allocates only for a new frame or method. Never fails.
  FrameRef intern(uint64_t method, int64_t location);

  // The frame with this ID, or nothing. Never allocates.
  std::optional<FrameView> find(uint64_t frame_id) const;

  // The source line of location in method: the line of the last line-table entry whose start
  // location is at or before location (binary search); kNativeMethodLine for a native method;
  // kUnknownLine when location is negative, precedes the first entry, the method has no table, or
  // line numbers are off (lineno=n, natives too). Resolves the method
  // the first time (allocates then).
  int32_t line_for(uint64_t method, int64_t location);

  // Claims the FRAME record of frame_id for the current file: the first call per file returns
  // needed = true with the names interned in names; later calls return needed = false.
  // Allocates as NameTable::intern does.
  FrameRecord claim_record(uint64_t frame_id, NameTable* names);

  // Starts a new output file: every frame needs its FRAME record again.
  void reset_written();

  size_t size() const { return frames_.size(); }
  size_t method_count() const { return methods_.size(); }

 private:
  struct Method {
    MethodInfo info;
    std::string class_name;  // Java form of info.class_signature
  };
  struct Frame {
    uint64_t method;
    int64_t location;
    uint32_t method_index;
    int32_t line;
    bool written;
  };
  struct FrameKey {
    uint64_t method;
    int64_t location;
    bool operator==(const FrameKey&) const = default;
  };
  struct FrameKeyHash {
    uint64_t operator()(const FrameKey& key) const;
  };

  uint32_t method_index(uint64_t method);
  int32_t line_in(const Method& entry, int64_t location) const;

  MethodResolver* resolver_;
  bool line_numbers_;
  std::deque<Method> methods_;
  FlatMap<uint64_t, uint32_t> method_by_id_;  // -> index into methods_
  std::vector<Frame, memory::Allocator<Frame>> frames_;  // frame i has ID make_id(kFrame, i + 1)
  FlatMap<FrameKey, uint32_t, FrameKeyHash> frame_by_key_;  // -> frame ID index (i + 1)
};

}  // namespace fasthprof
