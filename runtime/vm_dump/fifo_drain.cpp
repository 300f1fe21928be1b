#include "vm_dump/fifo_drain.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace fasthprof {

namespace {

// The pipe's name inside its private folder; HotSpot 22+ adds ".p<N>" for its side files.
constexpr char kPipeName[] = "heap.fifo";

// Bytes per read: a full pipe (raised to 1 MiB below where allowed), so that the writer is woken
// as rarely as possible.
constexpr size_t kReadSize = size_t{1} << 20;

}  // namespace

FifoDrain::FifoDrain(std::unique_ptr<PrivateFolder> folder)
    : folder_(std::move(folder)), path_(folder_->path() + "/" + kPipeName) {}

std::unique_ptr<FifoDrain> FifoDrain::create(const std::string& folder, std::string* error) {
  // The private folder goes into the output's folder rather than /tmp: the JVM's side file is then
  // on the output's file system, where the kernel copies its unchanged runs into the output.
  auto private_folder = PrivateFolder::create(folder, ".fasthprof-" + std::to_string(::getpid()) + "-", error);
  if (!private_folder) return nullptr;
  if (::mkfifoat(private_folder->fd(), kPipeName, 0600) != 0) {
    *error = "cannot make a pipe in " + private_folder->path() + ": " + std::strerror(errno);
    return nullptr;  // the folder goes with private_folder
  }
  return std::unique_ptr<FifoDrain>(new FifoDrain(std::move(private_folder)));
}

FifoDrain::~FifoDrain() { finish(); }

int FifoDrain::open_pipe() const {
  return ::openat(folder_->fd(), kPipeName, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
}

bool FifoDrain::start(Consumer consumer, std::string* error) {
  consumer_ = std::move(consumer);
  // Non-blocking open of the read end succeeds at once; until a writer opens the pipe, poll()
  // reports nothing on it (Linux reports a hang-up only after a writer came and went).
  fd_ = open_pipe();
  if (fd_ < 0) {
    *error = "cannot open " + path_ + ": " + std::strerror(errno);
    return false;
  }
  ::fcntl(fd_, F_SETPIPE_SZ, static_cast<int>(kReadSize));  // best effort: the limit may be lower
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    *error = std::string("cannot make a pipe: ") + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  null_fd_ = ::open("/dev/null", O_WRONLY | O_CLOEXEC);  // without it, skipped bytes are read and dropped
  int made = ::pthread_create(&thread_, nullptr, &thread_main, this);
  if (made != 0) {
    *error = std::string("cannot start the thread that reads the JVM's dump: ") + std::strerror(made);
    return false;
  }
  started_ = true;
  return true;
}

void* FifoDrain::thread_main(void* self) {
  pthread_setname_np(pthread_self(), "fasthprof-drain");  // 15 characters: the kernel's limit
  static_cast<FifoDrain*>(self)->run();
  return nullptr;
}

void FifoDrain::run() {
  std::vector<char> buffer(kReadSize);
  bool consuming = true;
  bool stopping = false;
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    // Once stopping, only what is left in the pipe is read, without waiting.
    int ready = stopping ? 1 : ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      error_ = std::string("poll: ") + std::strerror(errno);
      return;
    }
    if (!stopping && (fds[1].revents & POLLIN) != 0) stopping = true;
    if (!stopping && fds[0].revents == 0) continue;
    if (skip_left_ > 0 && null_fd_ >= 0) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(skip_left_, uint64_t{1} << 30));
      ssize_t moved = ::splice(fd_, nullptr, null_fd_, nullptr, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (moved > 0) {
        skip_left_ -= static_cast<uint64_t>(moved);
        bytes_.fetch_add(static_cast<uint64_t>(moved), std::memory_order_release);
        continue;
      }
      if (moved < 0 && errno == EINTR) continue;
      if (moved < 0 && errno == EAGAIN) {
        if (stopping) return;
        continue;
      }
      if (moved < 0) {
        // No splice between these two: read and drop instead.
        ::close(null_fd_);
        null_fd_ = -1;
        continue;
      }
      // moved == 0: end of file, handled by the read below.
    }
    size_t want = buffer.size();
    if (skip_left_ > 0) want = static_cast<size_t>(std::min<uint64_t>(want, skip_left_));
    ssize_t got = ::read(fd_, buffer.data(), want);
    if (got > 0) {
      if (!opened_.load(std::memory_order_relaxed)) {
        opened_.store(true, std::memory_order_release);
        // The writer holds its own descriptor now: the name is no longer needed.
        ::unlinkat(folder_->fd(), kPipeName, 0);
      }
      bytes_.fetch_add(static_cast<uint64_t>(got), std::memory_order_release);
      if (skip_left_ > 0) {
        skip_left_ -= static_cast<uint64_t>(got);
        continue;
      }
      if (consuming) consuming = consumer_(buffer.data(), static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) {
      if (stopping) return;
      continue;
    }
    if (got < 0) {
      error_ = std::string("cannot read the JVM's dump: ") + std::strerror(errno);
      return;
    }
    // End of file: no writer now. The writer may come back (JDK 22+ opens the path only after its
    // safepoint), so the pipe is opened afresh to wait for it, unless stopping.
    if (stopping) return;
    if (opened_.load(std::memory_order_relaxed)) return;  // the writer came and went: the dump is over
    int again = open_pipe();
    if (again < 0) {
      // Only stopping is left to wait for.
      char byte;
      while (::read(stop_pipe_[0], &byte, 1) < 0 && errno == EINTR) {
      }
      return;
    }
    ::close(fd_);
    fd_ = again;
  }
}

uint64_t FifoDrain::finish() {
  if (started_) {
    char byte = 1;
    while (::write(stop_pipe_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    ::pthread_join(thread_, nullptr);
    started_ = false;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  for (int& end : stop_pipe_) {
    if (end >= 0) ::close(end);
    end = -1;
  }
  if (null_fd_ >= 0) ::close(null_fd_);
  null_fd_ = -1;
  folder_->remove();
  return bytes_.load(std::memory_order_acquire);
}

}  // namespace fasthprof
