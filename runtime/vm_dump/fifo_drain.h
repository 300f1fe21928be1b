// A named pipe that HotSpot's heap dumper writes into, and the thread that takes its bytes
// (agent/heap/vm_heap_dump.h). On JDK 17 the VM thread writes the dump into the pipe inside the
// safepoint, so the program stays stopped until the last byte is read: the drain thread only reads
// and hands each chunk to a consumer that must not wait on the VM (the sink, a local file). It is
// a plain pthread that never calls the VM.
//
// Lifetime of the path: the pipe is made with mkfifo (0600) inside a private folder of its own
// (runtime/vm_dump/private_folder.h: a fresh name, mode 0700) in the folder given, so that no other user
// can plant a link or a file where the JVM writes, neither at the pipe's name nor at the
// "<path>.p<N>" side files JDK 22+ writes the dump into first. The pipe's name is removed as soon
// as a writer has opened it (the VM keeps its descriptor); the folder and everything in it by
// finish() or the destructor.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "vm_dump/private_folder.h"

namespace fasthprof {

class FifoDrain {
 public:
  // Called on the drain thread with each chunk read, in order. Returns false to stop consuming:
  // later bytes are still read (so that the writer never blocks) but dropped.
  using Consumer = std::function<bool(const void* data, size_t size)>;

  // Makes the private folder <folder>/.fasthprof-<pid>-XXXXXX and the pipe heap.fifo in it.
  // Returns null with *error set (one line) when it cannot; nothing is left behind then. Allocates.
  static std::unique_ptr<FifoDrain> create(const std::string& folder, std::string* error);

  ~FifoDrain();
  FifoDrain(const FifoDrain&) = delete;
  FifoDrain& operator=(const FifoDrain&) = delete;

  const std::string& path() const { return path_; }

  // Opens the read end (without waiting for a writer) and starts the thread. Returns false with
  // *error set when it cannot.
  bool start(Consumer consumer, std::string* error);

  // The writer is done (the attach reply came, whatever it said): the thread takes what is still
  // in the pipe and ends; the private folder is removed with the pipe and the side files in it.
  // Returns the bytes read. Idempotent.
  uint64_t finish();

  // Called by the consumer (on the drain thread): the next `bytes` of the pipe are taken without
  // being read into this process (spliced to /dev/null) nor handed to the consumer: bytes the
  // consumer reads from elsewhere (the JVM's side file, which HotSpot 22+ copies into the pipe).
  void skip(uint64_t bytes) { skip_left_ += bytes; }

  // Bytes taken from the pipe so far, skipped ones included (any thread).
  uint64_t bytes() const { return bytes_.load(std::memory_order_acquire); }
  // Whether a writer ever opened the pipe.
  bool opened() const { return opened_.load(std::memory_order_acquire); }
  // A read error, empty if none (valid after finish()).
  const std::string& error() const { return error_; }

 private:
  explicit FifoDrain(std::unique_ptr<PrivateFolder> folder);
  static void* thread_main(void* self);
  void run();
  int open_pipe() const;

  std::unique_ptr<PrivateFolder> folder_;
  std::string path_;
  Consumer consumer_;
  int fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int null_fd_ = -1;         // /dev/null, where skipped bytes are spliced
  uint64_t skip_left_ = 0;   // drain thread only
  pthread_t thread_{};
  bool started_ = false;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<bool> opened_{false};
  std::string error_;
};

}  // namespace fasthprof
