// Runs one verb of the `fasthprof` command, its real entry point (verb_main), on fuzz input: the
// input goes into a file of no name (memfd) that the verb opens by its /proc/self/fd path, the
// verb's output to /dev/null, its messages into a buffer that is checked. A verb must give an exit
// status of 0, 1 or 2 for anything, with a message when it refuses (2) and none when it succeeds
// (0); it must never crash, hang or read outside its input.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace fasthprof::fuzz {

// An input file: the bytes of a memfd, rewritten for each input.
class InputFile {
 public:
  InputFile() : fd_(memfd_create("fasthprof-fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    for (size_t done = 0; done < size;) {
      const ssize_t written = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (written <= 0) std::abort();
      done += static_cast<size_t>(written);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

// The verb's messages: stderr points at a buffer of this process while it runs.
class Messages {
 public:
  Messages() : file_(open_memstream(&text_, &size_)) {
    if (file_ == nullptr) std::abort();
  }
  ~Messages() {
    std::fclose(file_);
    std::free(text_);
  }
  Messages(const Messages&) = delete;
  Messages& operator=(const Messages&) = delete;

  // Runs run() with stderr captured; returns what it printed.
  template <typename Run> std::string capture(Run run) {
    std::fflush(file_);
    const size_t before = size_;
    FILE* saved = stderr;
    stderr = file_;
    run();
    stderr = saved;
    std::fflush(file_);
    std::string printed(text_ + before, size_ - before);
    std::rewind(file_);
    return printed;
  }

 private:
  char* text_ = nullptr;
  size_t size_ = 0;
  FILE* file_;
};

[[noreturn]] inline void broken(std::string_view verb, const std::string& what) {
  std::fprintf(stderr, "fuzz %.*s: %s\n", static_cast<int>(verb.size()), verb.data(), what.c_str());
  std::abort();
}

// Whether every line printed is a note a verb gives beside a good answer: the SITES coverage line
// of collapsed, flame and diff (tools/fasthprof/profile.h Table::coverage).
inline bool only_notes(const std::string& printed) {
  size_t start = 0;
  while (start < printed.size()) {
    size_t end = printed.find('\n', start);
    if (end == std::string::npos) end = printed.size();
    const std::string_view line(printed.data() + start, end - start);
    if (!line.empty() && (line.find(" lists ") == std::string_view::npos ||
                          line.find("run it with cutoff=0 to list every site") == std::string_view::npos)) {
      return false;
    }
    start = end + 1;
  }
  return true;
}

// Runs verb_main with argv {verb, args..., "-o", "/dev/null", files...} and checks its answer.
// A verb's own verdict (exit 1) is allowed only where verdict_allowed.
inline void run_verb(int (*verb_main)(int, char**), const char* verb, std::vector<std::string> args,
                     const std::vector<std::string>& files, bool verdict_allowed) {
  static Messages messages;
  args.insert(args.begin(), verb);
  args.push_back("-o");
  args.push_back("/dev/null");
  args.insert(args.end(), files.begin(), files.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int status = -1;
  const std::string printed =
      messages.capture([&] { status = verb_main(static_cast<int>(argv.size() - 1), argv.data()); });
  if (status == 0 && !printed.empty() && !only_notes(printed)) broken(verb, "exit 0 with a message: " + printed);
  if (status == 1 && !verdict_allowed) broken(verb, "exit 1, which this verb never gives");
  if ((status == 1 || status == 2) && printed.empty()) broken(verb, "exit " + std::to_string(status) + " with no message");
  if (status < 0 || status > 2) broken(verb, "exit " + std::to_string(status));
}

// One of choices, picked by the input's last byte, so that every seed file is used as it is.
inline const std::vector<std::string>& pick(const std::vector<std::vector<std::string>>& choices, const uint8_t* data,
                                            size_t size) {
  return choices[size == 0 ? 0 : data[size - 1] % choices.size()];
}

}  // namespace fasthprof::fuzz
