#include "sites/instance_intrinsic.h"

#include <optional>

#include "fork_dump/elf_symbols.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// JvmtiExport::_should_notify_object_alloc (an int), mangled as libjvm.so names it.
constexpr const char* kNotifyWord = "_ZN11JvmtiExport27_should_notify_object_allocE";

int load(const int* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

}  // namespace

void InstanceIntrinsic::prepare(jvmtiEnv* jvmti) {
  if (tried_) return;
  tried_ = true;
  if (jvmti::vm_major_version(jvmti) < 23) return;  // the intrinsic of JDK 17 to 22 never calls the native for the event
  std::optional<LoadedObject> jvm = loaded_object("libjvm.so");
  if (!jvm) {
    why_ = "no libjvm.so is loaded";
    return;
  }
  std::string error;
  std::optional<ElfSymbols> symbols = ElfSymbols::open(jvm->path, &error);
  if (!symbols) {
    why_ = "cannot read " + jvm->path + ": " + error;
    return;
  }
  std::optional<ElfSymbol> symbol = symbols->find(kNotifyWord);
  if (!symbol || symbol->size != sizeof(int)) {
    why_ = jvm->path + " names no JvmtiExport::_should_notify_object_alloc";
    return;
  }
  int* word = reinterpret_cast<int*>(jvm->base + symbol->value);
  if (load(word) != 0) {
    why_ = "another agent has VMObjectAlloc on: its events of Unsafe.allocateInstance are kept";
    return;
  }
  word_ = word;
}

void InstanceIntrinsic::release() {
  if (word_ != nullptr && !released_) {
    if (load(word_) != 1) {
      why_ = "JvmtiExport::_should_notify_object_alloc did not follow VMObjectAlloc";
      word_ = nullptr;
      return;
    }
    __atomic_store_n(word_, 0, __ATOMIC_RELEASE);
    released_ = true;
    return;
  }
  keep_released();
}

void InstanceIntrinsic::keep_released() {
  if (!released_ || load(word_) == 0) return;
  __atomic_store_n(word_, 0, __ATOMIC_RELEASE);
  resets_.fetch_add(1, std::memory_order_relaxed);
}

std::string InstanceIntrinsic::describe() const {
  if (released_) {
    return "compiled Unsafe.allocateInstance inline (the VM's notice cleared, again " +
           std::to_string(resets_.load(std::memory_order_relaxed)) + " times)";
  }
  if (why_.empty()) return "compiled Unsafe.allocateInstance inline (JDK 17 to 22: the VM's own way)";
  return "compiled Unsafe.allocateInstance calls its native: " + why_;
}

}  // namespace fasthprof
