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

bool InstanceIntrinsic::prepare(jvmtiEnv* jvmti, std::string* why) {
  int jdk = jvmti::vm_major_version(jvmti);
  if (jdk < 23) {
    why->clear();  // the intrinsic of JDK 17 to 22 never calls the native for the event
    return false;
  }
  std::optional<LoadedObject> jvm = loaded_object("libjvm.so");
  if (!jvm) {
    *why = "no libjvm.so is loaded";
    return false;
  }
  std::string error;
  std::optional<ElfSymbols> symbols = ElfSymbols::open(jvm->path, &error);
  if (!symbols) {
    *why = "cannot read " + jvm->path + ": " + error;
    return false;
  }
  std::optional<ElfSymbol> symbol = symbols->find(kNotifyWord);
  if (!symbol || symbol->size != sizeof(int)) {
    *why = jvm->path + " names no JvmtiExport::_should_notify_object_alloc";
    return false;
  }
  int* word = reinterpret_cast<int*>(jvm->base + symbol->value);
  if (load(word) != 0) {
    *why = "another agent has VMObjectAlloc on: its events of Unsafe.allocateInstance are kept";
    return false;
  }
  word_ = word;
  return true;
}

bool InstanceIntrinsic::release(std::string* why) {
  if (word_ == nullptr) return false;
  if (load(word_) != 1) {
    *why = "JvmtiExport::_should_notify_object_alloc did not follow VMObjectAlloc";
    word_ = nullptr;
    return false;
  }
  __atomic_store_n(word_, 0, __ATOMIC_RELEASE);
  released_ = true;
  return true;
}

void InstanceIntrinsic::keep_released() {
  if (!released_ || load(word_) == 0) return;
  __atomic_store_n(word_, 0, __ATOMIC_RELEASE);
  resets_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace fasthprof
