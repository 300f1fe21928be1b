// Natives told by the thread's last Java frame (agent/sites/native_frames.h).
#include "sites/native_frames.h"

#include <optional>

#include "hotspot_structs.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// A learned return address's slot holds which watched native it is in its top bit.
constexpr uint64_t kWhichBit = uint64_t{1} << 63;

// Where a thread's JNIEnv lies in its JavaThread, which the tables do not list: java.lang.Thread's
// eetop holds the JavaThread's address, checked by the stack top the VM keeps in it.
std::optional<uint64_t> env_offset(jvmtiEnv* jvmti, JNIEnv* jni) {
  auto stack_base = hotspot_field_offset("JavaThread", "_stack_base");
  jclass thread_class = jni->FindClass("java/lang/Thread");
  jfieldID eetop = thread_class == nullptr ? nullptr : jni->GetFieldID(thread_class, "eetop", "J");
  jthread current = nullptr;
  if (jvmti::clear_exception(jni) || eetop == nullptr || !stack_base ||
      jvmti->GetCurrentThread(&current) != JVMTI_ERROR_NONE || current == nullptr) {
    return std::nullopt;
  }
  auto thread = static_cast<uintptr_t>(jni->GetLongField(current, eetop));
  jni->DeleteLocalRef(current);
  auto env = reinterpret_cast<uintptr_t>(jni);
  const uintptr_t top = thread_stack_top();
  if (thread == 0 || env <= thread || env - thread > 65536 || top == 0 ||
      *reinterpret_cast<const uintptr_t*>(thread + *stack_base) != top) {
    return std::nullopt;
  }
  return env - thread;
}

}  // namespace

bool NativeFrames::start(jvmtiEnv* jvmti, JNIEnv* jni, jmethodID first, jmethodID second, std::string* why) {
  jvmti_ = jvmti;
  watched_[0] = first;
  watched_[1] = second;
#if defined(__x86_64__)
  auto env = env_offset(jvmti, jni);
  auto anchor = hotspot_field_offset("JavaThread", "_anchor");
  auto sp = hotspot_field_offset("JavaFrameAnchor", "_last_Java_sp");
  auto fp = hotspot_field_offset("JavaFrameAnchor", "_last_Java_fp");
  auto pc = hotspot_field_offset("JavaFrameAnchor", "_last_Java_pc");
  if (!env || !anchor || !sp || !fp || !pc || !hotspot_interpreter_code(&interpreter_low_, &interpreter_high_)) {
    *why = "this VM does not describe a thread's last Java frame";
    return false;
  }
  env_offset_ = *env;
  // ThreadShadow is the JavaThread's first base: its fields lie at their own offsets.
  if (auto pending = hotspot_field_offset("ThreadShadow", "_pending_exception")) pending_offset_ = *pending;
  anchor_sp_ = *anchor + *sp;
  anchor_fp_ = *anchor + *fp;
  anchor_pc_ = *anchor + *pc;
  reading_ = true;
  return true;
#else
  *why = "the frames of this processor are not read";
  return false;
#endif
}

void NativeFrames::on_code_loaded(jmethodID method, const void* code, jint size) {
  int which = watched_index(method);
  if (which < 0 || size <= 0) return;
  auto low = reinterpret_cast<uintptr_t>(code);
  for (Wrapper& wrapper : wrappers_) {
    uintptr_t empty = 0;
    if (wrapper.low.load(std::memory_order_acquire) == low) return;  // reported again (GenerateEvents)
    if (wrapper.low.compare_exchange_strong(empty, low, std::memory_order_acq_rel)) {
      wrapper.which.store(which, std::memory_order_relaxed);
      wrapper.high.store(low + static_cast<uintptr_t>(size), std::memory_order_release);
      return;
    }
  }
  // More wrappers than kept (a native compiled again and again): those frames are asked of JVMTI.
}

void NativeFrames::on_code_unloaded(const void* code) {
  for (std::atomic<uint64_t>& learned : learned_) learned.store(0, std::memory_order_release);
  auto low = reinterpret_cast<uintptr_t>(code);
  for (Wrapper& wrapper : wrappers_) {
    if (wrapper.low.load(std::memory_order_acquire) != low) continue;
    wrapper.high.store(0, std::memory_order_release);  // no pc lies below it: matches nothing
    wrapper.which.store(-1, std::memory_order_relaxed);
    wrapper.low.store(0, std::memory_order_release);
  }
}

bool NativeFrames::top(JNIEnv* jni, jmethodID* method) {
  *method = nullptr;
  if (!reading_) return false;
  const uintptr_t sp = thread_word(jni, anchor_sp_);
  const uintptr_t pc = thread_word(jni, anchor_pc_);
  const uintptr_t fp = thread_word(jni, anchor_fp_);
  if (sp == 0 || pc == 0) return false;
  if (pc >= interpreter_low_ && pc < interpreter_high_) {
    if (fp == 0) return false;
    // The interpreter's frame of the method it runs: a native's own when called interpreted.
    const void* running = reinterpret_cast<const void* const*>(fp)[kInterpreterFrameMethod];
    for (jmethodID watched : watched_) {
      if (watched != nullptr && *reinterpret_cast<const void* const*>(watched) == running) *method = watched;
    }
    read_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  for (const Wrapper& wrapper : wrappers_) {
    if (pc >= wrapper.low.load(std::memory_order_acquire) && pc < wrapper.high.load(std::memory_order_acquire)) {
      int which = wrapper.which.load(std::memory_order_relaxed);
      if (which < 0) return false;
      *method = watched_[which];
      read_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  for (const std::atomic<uint64_t>& slot : learned_) {
    uint64_t learned = slot.load(std::memory_order_acquire);
    if (learned != 0 && (learned & ~kWhichBit) == pc) {
      *method = watched_[(learned & kWhichBit) != 0 ? 1 : 0];
      read_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

jmethodID NativeFrames::watched(JNIEnv* jni, jmethodID top) {
  asked_.fetch_add(1, std::memory_order_relaxed);
  int which = watched_index(top);
  if (which < 0) return nullptr;
  if (reading_) {
    const uintptr_t pc = thread_word(jni, anchor_pc_);
    // A compiled wrapper's return address (an interpreted native is told by its frame already).
    if (pc != 0 && (pc >> 47) == 0 && !(pc >= interpreter_low_ && pc < interpreter_high_)) {
      uint32_t slot = next_learned_.fetch_add(1, std::memory_order_relaxed) % kLearned;
      learned_[slot].store(pc | (which == 1 ? kWhichBit : 0), std::memory_order_release);
    }
  }
  return top;
}

}  // namespace fasthprof
