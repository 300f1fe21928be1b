// Heap-dump tags for objects whose allocation site is in their header (marked_object_tags.h).
#include "heap/marked_object_tags.h"

#include <unordered_map>

#include "base/clock.h"
#include "base/ids.h"
#include "base/reserved_memory.h"
#include "heap/heap_walk.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// The list's entries: address space for the most objects the heap can hold (16 bytes each at
// least), reserved without backing; only the pages written are ever committed.
class EntryBuffer {
 public:
  explicit EntryBuffer(uint64_t heap_bytes) {
    uint64_t entries = heap_bytes / 16 + heap_bytes / 128 + (uint64_t{1} << 16);
    bytes_ = entries * sizeof(uint64_t);
    list.entries = static_cast<uint64_t*>(reserve_memory(bytes_));
    list.capacity = list.entries != nullptr ? entries : 0;
  }
  ~EntryBuffer() { release_memory(list.entries, bytes_); }
  EntryBuffer(const EntryBuffer&) = delete;
  EntryBuffer& operator=(const EntryBuffer&) = delete;

  ObjectTraceList list;

 private:
  size_t bytes_ = 0;
};

// IterateThroughHeap's side of the match, on the VM thread at its safepoint.
struct Match {
  const ObjectTraceList* list = nullptr;
  uint64_t first_index = 0;
  std::vector<uint32_t>* serials = nullptr;
  std::unordered_map<uint64_t, uint32_t>* tagged = nullptr;
  size_t at = 0;
  std::unordered_map<jlong, uint32_t> word_of_tag;
  std::unordered_map<uint32_t, jlong> tag_of_word;
  std::string mismatch;
};

jint JNICALL match_object(jlong class_tag, jlong /*size*/, jlong* tag_ptr, jint /*length*/, void* data) {
  auto& match = *static_cast<Match*>(data);
  if (match.at >= match.list->count) {  // count <= capacity: tag() checked
    match.mismatch = "the heap holds more objects than the marks' walk met";
    return JVMTI_VISIT_ABORT;
  }
  uint64_t entry = match.list->entries[match.at++];
  auto word = static_cast<uint32_t>(entry >> 32);
  auto serial = static_cast<uint32_t>(entry);
  if (class_tag != 0) {
    auto [by_tag, new_tag] = match.word_of_tag.try_emplace(class_tag, word);
    auto [by_word, new_word] = match.tag_of_word.try_emplace(word, class_tag);
    if (by_tag->second != word || by_word->second != class_tag) {
      match.mismatch = "object " + std::to_string(match.at) + " is of another class than the marks' walk met";
      return JVMTI_VISIT_ABORT;
    }
  }
  if (serial == 0) return 0;
  if (*tag_ptr == 0) {
    match.serials->push_back(serial);
    *tag_ptr = static_cast<jlong>(make_id(IdSpace::kFirstHeapDumpTag, match.first_index + match.serials->size()));
  } else {
    // Tagged already, by this dump (a static field's value, named in its CLASS DUMP) or as a
    // thread or class loader: the tag keeps its ID and names the trace here.
    (*match.tagged)[static_cast<uint64_t>(*tag_ptr)] = serial;
  }
  return 0;
}

}  // namespace

void MarkedObjectTags::prepare(jvmtiEnv* jvmti, ReportContext& report, AllocationTraces& traces,
                               uint64_t heap_bytes) {
  uint64_t started = monotonic_ns();
  // The dump writes the reachable objects only; the dead ones the collector has not freed yet
  // would be listed and tagged too (on H2's load at exit 5 M of them, 4 s, against 60 000 dumped).
  jvmti->ForceGarbageCollection();
  heap_bytes_ = heap_bytes;
  traces.prepare_object_traces(report);
  seconds_ = seconds_since(started);
}

bool MarkedObjectTags::tag(jvmtiEnv* jvmti, AllocationTraces& traces, std::string* why) {
  uint64_t started = monotonic_ns();
  EntryBuffer buffer(heap_bytes_);
  if (buffer.list.entries == nullptr) {
    *why = "no address space for the list of the heap's objects";
    return false;
  }
  // From the walk to the end of IterateThroughHeap nothing may allocate in the Java heap: no JNI
  // call that makes an object, no call into Java (prepare() made those).
  if (!traces.walk_object_traces(&buffer.list, why)) return false;
  if (buffer.list.count > buffer.list.capacity) {
    *why = "the heap holds more objects than its size allows for";
    return false;
  }
  Match match;
  match.list = &buffer.list;
  match.first_index = reserve_heap_dump_ids(buffer.list.named);
  match.serials = &serials_;
  match.tagged = &tagged_;
  serials_.reserve(buffer.list.named);
  jvmtiHeapCallbacks callbacks{};
  callbacks.heap_iteration_callback = &match_object;
  jvmtiError error = jvmti->IterateThroughHeap(0, nullptr, &callbacks, &match);
  if (error != JVMTI_ERROR_NONE) {
    match.mismatch = "IterateThroughHeap: " + jvmti::error_name(error);
  } else if (match.mismatch.empty() && match.at != buffer.list.count) {
    match.mismatch = "the heap holds " + std::to_string(match.at) + " objects where the marks' walk met " +
                     std::to_string(buffer.list.count);
  }
  if (!match.mismatch.empty()) {
    uint64_t untagged = 0;  // the tags set here, taken back
    if (!serials_.empty()) {
      clear_heap_dump_tags(jvmti, &untagged, match.first_index + 1, match.first_index + serials_.size());
    }
    serials_.clear();
    tagged_.clear();
    *why = match.mismatch;
    return false;
  }
  first_index_ = match.first_index;
  objects_ = buffer.list.count;
  seconds_ += seconds_since(started);
  return true;
}

uint32_t MarkedObjectTags::trace_serial(uint64_t tag) const {
  uint64_t index = id_index(tag);
  if (id_space(tag) == IdSpace::kFirstHeapDumpTag && index > first_index_ && index - first_index_ <= serials_.size()) {
    return serials_[index - first_index_ - 1];
  }
  if (tagged_.empty()) return 0;
  auto found = tagged_.find(tag);
  return found != tagged_.end() ? found->second : 0;
}

}  // namespace fasthprof
