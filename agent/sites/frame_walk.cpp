// Allocation traces by frame walk (agent/sites/frame_walk.h).
#include "sites/frame_walk.h"

#include <pthread.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/reserved_memory.h"
#include "hotspot_structs.h"

namespace fasthprof {

namespace {

// x86-64 frames as HotSpot lays them out (frame_x86.hpp), the same on JDK 17 to 25: the caller's
// frame pointer at [fp], the return address at [fp + 1]; an interpreted frame's Method* and
// bytecode pointer (hotspot_structs.h); the call stub's JavaCallWrapper* at [fp - 6].
constexpr int kEntryCallWrapper = -6;
// Frames above the allocating method's: the native's (its wrapper, or the interpreter's frame for
// it) and the tracker's counting method, which calls the native itself and is never inlined.
constexpr int kTrackerFrames = 2;
constexpr int kMaxKeyFrames = kTrackerFrames + FrameWalk::kMaxDepth;
// Per thread: a cache of 2048 sets of two (64 KiB), made at the thread's first allocation. Behind
// them one table for all threads, of this many keys at most (about 48 bytes each).
constexpr size_t kSets = 2048;
constexpr size_t kMaxSharedKeys = size_t{1} << 20;

FrameWalk* active = nullptr;

// An entry names its key by the hash's high half; its low half chose the set (75 bits in all).
// 16 bytes, a set of two 32: a set never straddles two cache lines.
struct Entry {
  uint64_t high = 0;
  uint32_t context = 0, epoch = 0;
};

struct ThreadCache {
  alignas(64) Entry entries[kSets * 2];
  uintptr_t stack_high = 0;
  uint64_t walked = 0;  // answers from this cache (verbose=y)
  uint64_t kept = 0;    // of which made before an unload that left their code alone
};

pthread_key_t cache_key;
pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
thread_local ThreadCache* thread_cache = nullptr;
// The caches of the threads alive, and the answers of those that ended: for verbose=y's count.
std::mutex caches_mutex;
std::vector<ThreadCache*> caches;
uint64_t walked_by_ended = 0, kept_by_ended = 0;

void free_cache(void* memory) {
  auto* cache = static_cast<ThreadCache*>(memory);
  {
    std::lock_guard<std::mutex> lock(caches_mutex);
    walked_by_ended += cache->walked;
    kept_by_ended += cache->kept;
    caches.erase(std::remove(caches.begin(), caches.end(), cache), caches.end());
  }
  thread_cache = nullptr;
  std::free(cache);
}

ThreadCache* cache_here() {
  if (thread_cache != nullptr) return thread_cache;
  pthread_once(&cache_key_once, [] { pthread_key_create(&cache_key, &free_cache); });
  const uintptr_t stack_high = thread_stack_top();
  if (stack_high == 0) return nullptr;
  void* memory = std::aligned_alloc(alignof(ThreadCache), sizeof(ThreadCache));
  if (memory == nullptr) return nullptr;
  std::memset(memory, 0, sizeof(ThreadCache));  // epoch 0 is never current: every entry empty
  auto* cache = static_cast<ThreadCache*>(memory);
  cache->stack_high = stack_high;
  {
    std::lock_guard<std::mutex> lock(caches_mutex);
    caches.push_back(cache);
  }
  pthread_setspecific(cache_key, cache);  // freed when the thread ends
  thread_cache = cache;
  return cache;
}

template <typename T>
bool read_static(const char* type, const char* field, T* out) {
  auto address = hotspot_static_address(type, field);
  if (!address) return false;
  *out = *reinterpret_cast<const T*>(*address);
  return true;
}

}  // namespace

thread_local bool FrameWalk::clone_ahead_ = false;

struct FrameWalk::Key {
  uint64_t words[2 * kMaxKeyFrames];
  size_t length = 0;
};

bool FrameWalk::keep_frame_pointers() {
#if defined(__x86_64__)
  // Its type is checked against a bool flag's: the tables number types differently per JDK.
  return hotspot_set_bool_flag("PreserveFramePointer", true, "DisableAttachMechanism");
#else
  return false;
#endif
}

bool FrameWalk::start(jvmtiEnv* jvmti, int depth, std::string* why) {
  jvmti_ = jvmti;
  depth_ = depth;
  active = this;
  auto wrapper_anchor = hotspot_field_offset("JavaCallWrapper", "_anchor");
  auto anchor_sp = hotspot_field_offset("JavaFrameAnchor", "_last_Java_sp");
  if (!read_static("CodeCache", "_low_bound", &code_low_) || !read_static("CodeCache", "_high_bound", &code_high_) ||
      !hotspot_interpreter_code(&interpreter_low_, &interpreter_high_) ||
      !read_static("StubRoutines", "_call_stub_return_address", &call_stub_return_) || !wrapper_anchor ||
      !anchor_sp || code_high_ <= code_low_) {
    *why = "this VM does not describe its code cache and interpreter";
    return false;
  }
  wrapper_last_sp_ = *wrapper_anchor + *anchor_sp;
  code_words_ = ((code_high_ - code_low_) / 8 + 63) / 64;
  void* bits = reserve_memory(code_words_ * sizeof(uint64_t));
  if (bits == nullptr) {
    *why = "no memory for the map of compiled code";
    return false;
  }
  code_bits_ = static_cast<std::atomic<uint64_t>*>(bits);
  unloads_.start(code_low_, code_high_);  // without it every answer made before an unload is dropped
  std::string heaps_why;
  heaps_known_ = heaps_.start(&heaps_why);  // without it: compiled code named by its event alone
  walking_ = true;
  return true;
}

void FrameWalk::mark(const void* code, uint64_t size, bool on) {
  auto start = reinterpret_cast<uintptr_t>(code);
  if (code_bits_ == nullptr || size == 0 || start < code_low_ || start + size > code_high_) return;
  for (uintptr_t granule = (start - code_low_) / 8, last = (start + size - 1 - code_low_) / 8; granule <= last; ++granule) {
    uint64_t bit = uint64_t{1} << (granule & 63);
    if (on) {
      code_bits_[granule / 64].fetch_or(bit, std::memory_order_release);
    } else {
      code_bits_[granule / 64].fetch_and(~bit, std::memory_order_release);
    }
  }
}

void FrameWalk::on_code_loaded(const void* code, jint size) {
  if (!walking_ || size <= 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    code_sizes_[code] = static_cast<uint64_t>(size);
  }
  mark(code, static_cast<uint64_t>(size), true);
  if (heaps_known_) heaps_.learn(code);
}

void FrameWalk::on_code_unloaded(const void* code) {
  if (!walking_) return;
  uint64_t size = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = code_sizes_.find(code);
    if (found == code_sizes_.end()) return;
    size = found->second;
    code_sizes_.erase(found);
    // Freed at the new epoch, then the epoch: a thread that reads the new epoch sees the range.
    const uint32_t epoch = epoch_.load(std::memory_order_relaxed) + 1;
    unloads_.record(reinterpret_cast<uintptr_t>(code), size, epoch);
    epoch_.store(epoch, std::memory_order_release);
  }
  // Stale first, then gone: a key made from here on cannot take this code's place in a cache.
  mark(code, size, false);
}

bool FrameWalk::check_heaps(uint64_t* checked, uint64_t* agreed, bool* stub_apart) {
  if (!heaps_known_) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  *checked = *agreed = 0;
  for (const auto& [code, size] : code_sizes_) {
    ++*checked;
    *agreed += heaps_.in_nmethod(reinterpret_cast<uintptr_t>(code) + size / 2) ? 1 : 0;
  }
  *stub_apart = !heaps_.in_nmethod(call_stub_return_);
  return true;
}

bool FrameWalk::compiled_code(uintptr_t pc) const {
  if (pc < code_low_ || pc >= code_high_) return false;
  uintptr_t granule = (pc - code_low_) / 8;
  if ((code_bits_[granule / 64].load(std::memory_order_acquire) >> (granule & 63)) & 1) return true;
  // Not reported yet (or not an nmethod: a stub, an adapter, which the map tells apart).
  if (!heaps_known_ || !heaps_.in_nmethod(pc)) return false;
  heaps_.count_named();
  return true;
}

// The key of the frames from the allocating method's down, `depth` of them (or to the bottom of the
// thread's Java frames): false when a frame cannot be named by its code (then GetStackTrace must).
bool FrameWalk::make_key(const uintptr_t* fp, uintptr_t stack_high, Key* key, bool checked) const {
  key->length = 0;
  const int frames = kTrackerFrames + depth_;
  for (int i = 0; i < frames; ++i) {
    const uintptr_t pc = fp[1];
    const auto* next = reinterpret_cast<const uintptr_t*>(fp[0]);
    // Each caller's frame lies above its callee's, on this thread's stack.
    if (next <= fp || reinterpret_cast<uintptr_t>(next) + 16 > stack_high || (reinterpret_cast<uintptr_t>(next) & 7) != 0) {
      return false;
    }
    const bool interpreted = pc >= interpreter_low_ && pc < interpreter_high_;
    if (i >= kTrackerFrames) {
      if (interpreted) {
        key->words[key->length++] = next[kInterpreterFrameMethod];
        key->words[key->length++] = next[kInterpreterFrameBcp];
      } else if (pc == call_stub_return_) {
        // Called by the VM: the stack's end when the call saved no Java frame (a thread's run(),
        // main); else more Java frames lie beyond C++ frames, which have no frame pointers.
        auto wrapper = static_cast<uintptr_t>(next[kEntryCallWrapper]);
        if (wrapper <= reinterpret_cast<uintptr_t>(next) || wrapper + wrapper_last_sp_ + 8 > stack_high) return false;
        if (*reinterpret_cast<const uintptr_t*>(wrapper + wrapper_last_sp_) != 0) return false;
        key->words[key->length++] = 1;
        key->words[key->length++] = 0;
        return true;
      } else if (!checked || compiled_code(pc)) {
        key->words[key->length++] = pc;
        key->words[key->length++] = 0;
      } else {
        return false;
      }
    } else if (checked && !interpreted && !compiled_code(pc)) {
      return false;
    }
    fp = next;
  }
  return true;
}

jint FrameWalk::callers(JNIEnv* jni, const void* native_fp) {
  FrameWalk* self = active;
  if (self == nullptr) return 0;
  const auto* fp = static_cast<const uintptr_t*>(native_fp);
  ThreadCache* cache = self->walking_ ? cache_here() : nullptr;
  // The key unchecked first: a thread's cache holds only keys made checked, and the same words
  // name the same code until an unload changes the epoch. Checked on a miss (one walk in fifty on
  // javac): the code map's lookups were a fifth of the walk's samples.
  Key key;
  if (cache == nullptr || !self->make_key(fp, cache->stack_high, &key, false)) return self->ask(jni);
  const uint32_t epoch = self->epoch_.load(std::memory_order_acquire);
  const XXH128_hash_t hash = XXH3_128bits(key.words, key.length * sizeof(uint64_t));
  // The halves in registers: read back from the stack as one 16-byte copy, the returned pair
  // stalled on store forwarding (a quarter of this function's samples on javac).
  uint64_t low = hash.low64, high = hash.high64;
  asm("" : "+r"(low), "+r"(high));
  Entry* set = &cache->entries[(low & (kSets - 1)) * 2];
  for (int way = 0; way < 2; ++way) {
    Entry& entry = set[way];
    if (entry.high == high) {
      if (entry.epoch != epoch) {
        // Made before compiled code was unloaded: good still if none of its code was freed since.
        if (entry.epoch == 0 || !self->still_holds(key, entry.epoch)) break;  // 0: never filled
        entry.epoch = epoch;
        cache->kept++;
      }
      if (way == 1) std::swap(set[0], set[1]);  // the most recent first
      cache->walked++;
      return static_cast<jint>(set[0].context);
    }
  }
  Key checked;
  if (!self->make_key(fp, cache->stack_high, &checked, true)) return self->ask(jni);
  jint context = 0;
  if (!self->recall(checked, low, high, epoch, &context)) {
    context = self->ask(jni);
    self->remember(low, high, epoch, context);
  }
  set[1] = set[0];
  set[0] = Entry{high, static_cast<uint32_t>(context), epoch};
  return context;
}

bool FrameWalk::still_holds(const Key& key, uint32_t since) const {
  for (size_t i = 0; i + 1 < key.length; i += 2) {
    if (key.words[i + 1] != 0) return false;  // an interpreted frame: (Method*, bytecode pointer)
    if (key.words[i] == 1) continue;          // the end of the thread's Java frames
    if (!unloads_.unchanged_since(static_cast<uintptr_t>(key.words[i]), since)) return false;
  }
  return true;
}

// The table all threads share: a key another thread (or this one, before its cache lost it) met.
bool FrameWalk::recall(const Key& key, uint64_t low, uint64_t high, uint32_t epoch, jint* context) {
  std::lock_guard<std::mutex> lock(mutex_);
  SharedAnswer* found = shared_keys_.find(SharedKey{low, high});
  if (found == nullptr) return false;
  if (found->epoch != epoch) {
    // A newer answer than this thread's epoch is left to be asked again; an older one is checked.
    if (found->epoch > epoch || !still_holds(key, found->epoch)) return false;
    found->epoch = epoch;
    ++shared_kept_;
  }
  *context = static_cast<jint>(found->context);
  ++shared_hits_;
  return true;
}

uint64_t FrameWalk::shared_hits() {
  std::lock_guard<std::mutex> lock(mutex_);
  return shared_hits_;
}

void FrameWalk::remember(uint64_t low, uint64_t high, uint32_t epoch, jint context) {
  std::lock_guard<std::mutex> lock(mutex_);
  const SharedAnswer answer{static_cast<uint32_t>(context), epoch};
  if (SharedAnswer* found = shared_keys_.find(SharedKey{low, high})) {
    if (found->epoch <= epoch) *found = answer;  // a stale answer, asked again
    return;
  }
  // Answers are kept across unloads, so stale ones pile up where code keeps being replaced: a full
  // table starts again.
  if (shared_keys_.size() >= kMaxSharedKeys) shared_keys_.clear();
  shared_keys_.try_emplace(SharedKey{low, high}, answer);
}

// GetStackTrace of this thread: the native's frame, the tracker's, the allocating method's, then
// its callers, depth - 1 of which make the context.
jint FrameWalk::ask(JNIEnv*) {
  asked_.fetch_add(1, std::memory_order_relaxed);
  jvmtiFrameInfo frames[kMaxKeyFrames];
  jint count = 0;
  const jint wanted = static_cast<jint>(std::min(kTrackerFrames + depth_, kMaxKeyFrames));
  if (jvmti_->GetStackTrace(nullptr, 0, wanted, frames, &count) != JVMTI_ERROR_NONE) return 0;
  const jint skip = kTrackerFrames + 1;
  return count > skip ? intern(frames + skip, count - skip) : 0;
}

jint FrameWalk::intern(const jvmtiFrameInfo* frames, jint count) {
  std::vector<StackFrame> context;
  context.reserve(static_cast<size_t>(count));
  for (jint i = 0; i < count; ++i) {
    context.push_back({reinterpret_cast<uint64_t>(frames[i].method), static_cast<int64_t>(frames[i].location)});
  }
  uint64_t hash = XXH3_64bits(context.data(), context.size() * sizeof(StackFrame));
  std::lock_guard<std::mutex> lock(mutex_);
  auto& ids = by_hash_[hash];
  for (uint32_t id : ids) {
    const auto& known = contexts_[id - 1];
    if (known.size() == context.size() &&
        std::memcmp(known.data(), context.data(), context.size() * sizeof(StackFrame)) == 0) {
      return static_cast<jint>(id);
    }
  }
  contexts_.push_back(std::move(context));
  auto id = static_cast<uint32_t>(contexts_.size());
  ids.push_back(id);
  return static_cast<jint>(id);
}

std::vector<StackFrame> FrameWalk::frames(uint32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id == 0 || id > contexts_.size()) return {};
  return contexts_[id - 1];
}

namespace {

// One of the threads' cache counts, summed over the caches alive and those that ended.
uint64_t caches_total(uint64_t ThreadCache::*count, const uint64_t& ended) {
  std::lock_guard<std::mutex> lock(caches_mutex);
  uint64_t sum = ended;
  for (const ThreadCache* cache : caches) sum += cache->*count;  // a racy read: a figure for verbose=y
  return sum;
}

}  // namespace

uint64_t FrameWalk::walked() const { return caches_total(&ThreadCache::walked, walked_by_ended); }

uint64_t FrameWalk::kept_answers() {
  const uint64_t kept = caches_total(&ThreadCache::kept, kept_by_ended);
  std::lock_guard<std::mutex> lock(mutex_);
  return kept + shared_kept_;
}

uint64_t FrameWalk::contexts() {
  std::lock_guard<std::mutex> lock(mutex_);
  return contexts_.size();
}

}  // namespace fasthprof

// The native itself, found by the JVM in the agent's library (a boot class's natives are looked up
// in agents' libraries too): bound by name, it needs no RegisterNatives, of which HotSpot warns
// on stdout for a boot class. Its own frame is where the walk begins.
extern "C" JNIEXPORT jint JNICALL Java_java_lang_FasthprofAllocs_callers(JNIEnv* jni, jclass) {
  jint context = fasthprof::FrameWalk::callers(jni, __builtin_frame_address(0));
  // Not a tail call: this frame must stay where the walk reads it.
  asm volatile("" : "+r"(context));
  return context;
}

// The same before a sure call of Object.clone (FasthprofTracker.allocClone), marking the thread.
extern "C" JNIEXPORT jint JNICALL Java_java_lang_FasthprofAllocs_cloneCallers(JNIEnv* jni, jclass) {
  fasthprof::FrameWalk::mark_clone();
  jint context = fasthprof::FrameWalk::callers(jni, __builtin_frame_address(0));
  asm volatile("" : "+r"(context));
  return context;
}
