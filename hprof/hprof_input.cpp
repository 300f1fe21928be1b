#include "hprof_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace fasthprof {
namespace {

// release_before() acts once this much is behind it: one madvise per 32 MiB costs nothing
// measurable, and the resident set stays within a few of these steps.
constexpr uint64_t kReleaseStep = uint64_t{32} << 20;
// Decompressed bytes written to the temporary file at a time.
constexpr size_t kInflateChunk = size_t{1} << 20;
// The default limit of decompressed data: real heap dumps and profiles compress 3 to 30 times;
// past 100 a file is more likely built to expand (some archive readers refuse the same ratio).
constexpr uint64_t kDefaultExpansionRatio = 100;
constexpr uint64_t kDefaultExpansionFloor = uint64_t{256} << 20;

uint64_t page_size() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

// Lets go of the resident pages of [from, to) of a read-only file mapping at base (page aligned),
// whole pages only. Returns the offset released up to.
uint64_t release_pages(const uint8_t* base, uint64_t from, uint64_t to) {
  to &= ~(page_size() - 1);
  if (to > from) madvise(const_cast<uint8_t*>(base) + from, to - from, MADV_DONTNEED);
  return std::max(from, to);
}

// A file mapped read-only for the time of one open().
struct FileMapping {
  void* data = MAP_FAILED;
  uint64_t size = 0;
  ~FileMapping() {
    if (data != MAP_FAILED) munmap(data, size);
  }
};

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// A file of no name in dir, readable and writable by this process only. -1 with errno set when
// none can be made.
int open_temporary(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // A file system without O_TMPFILE: a named file, unlinked at once (mkstemp creates it 0600).
  std::string name = dir + "/fasthprof-XXXXXX";
  fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) unlink(name.c_str());
  return fd;
}

bool write_all(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

// The bytes that may be written in dir, leaving a tenth of its free space at the start; the
// largest value when the file system does not say.
uint64_t writable_bytes(const std::string& dir) {
  struct statvfs fs{};
  if (statvfs(dir.c_str(), &fs) != 0) return UINT64_MAX;
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  return free_bytes - free_bytes / 10;
}

std::string limit_message(uint64_t limit, bool default_limit, uint64_t in_at) {
  const std::string why = default_limit ? std::to_string(kDefaultExpansionRatio) + " times the file, at least " +
                                              std::to_string(kDefaultExpansionFloor >> 20) + " MiB"
                                        : std::string("as set");
  return "gzip: the data expands past the limit of " + std::to_string(limit) + " bytes (" + why +
         ") before compressed byte " + std::to_string(in_at);
}

std::string space_message(const std::string& dir, uint64_t room) {
  return "gzip: the decompressed data would leave less than a tenth of " + dir + " free (" + std::to_string(room) +
         " bytes may be written there; TMPDIR names another folder)";
}

}  // namespace

uint64_t HprofInput::default_max_expanded(uint64_t compressed_size) {
  if (compressed_size > UINT64_MAX / kDefaultExpansionRatio) return UINT64_MAX;
  return std::max(kDefaultExpansionFloor, compressed_size * kDefaultExpansionRatio);
}

bool looks_like_gzip(const uint8_t* data, uint64_t size) {
  return size >= 3 && data[0] == 0x1f && data[1] == 0x8b && data[2] == 8;
}

HprofInput::~HprofInput() { release(); }

void HprofInput::release() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = released_ = 0;
}

void HprofInput::release_before(uint64_t offset) {
  offset = std::min(offset, size_);
  if (data_ != nullptr && offset - std::min(offset, released_) >= kReleaseStep) {
    released_ = release_pages(data_, released_, offset);
  }
}

void HprofInput::release_range(uint64_t from, uint64_t to) {
  to = std::min(to, size_);
  if (data_ == nullptr || from >= to) return;
  release_pages(data_, (from + page_size() - 1) & ~(page_size() - 1), to);
}

bool HprofInput::open(const char* path, std::string* error) {
  release();
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || fstat(fd, &st) != 0) {
    *error = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return false;
  }
  FileMapping file;
  file.size = static_cast<uint64_t>(st.st_size);
  if (file.size > 0) file.data = mmap(nullptr, file.size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_error = errno;
  ::close(fd);
  stored_size_ = file.size;
  compressed_ = false;
  members_ = 0;
  if (file.size == 0) return true;
  if (file.data == MAP_FAILED) {
    *error = std::strerror(map_error);
    return false;
  }
  const uint8_t* bytes = static_cast<const uint8_t*>(file.data);
  madvise(file.data, file.size, MADV_SEQUENTIAL);
  if (!looks_like_gzip(bytes, file.size)) {
    // The mapping becomes this input's.
    data_ = static_cast<uint8_t*>(file.data);
    size_ = file.size;
    file.data = MAP_FAILED;
    return true;
  }
  return inflate_file(bytes, file.size, true, error);
}

bool HprofInput::inflate(const uint8_t* data, uint64_t size, std::string* error) {
  return inflate_file(data, size, false, error);
}

bool HprofInput::inflate_file(const uint8_t* data, uint64_t size, bool mapped, std::string* error) {
  release();
  compressed_ = true;
  stored_size_ = size;
  members_ = 0;
  expansion_limited_ = false;
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  const uint64_t limit = max_expanded_ != 0 ? max_expanded_ : default_max_expanded(size);
  const uint64_t room = writable_bytes(dir);
  FileDescriptor out;
  out.fd = open_temporary(dir);
  if (out.fd < 0) {
    *error = "gzip: cannot make a temporary file in " + dir + " to decompress into: " + std::strerror(errno);
    return false;
  }
  std::unique_ptr<uint8_t[]> chunk(new uint8_t[kInflateChunk]);
  z_stream stream{};
  // 16 + 15: a gzip wrapper (header, CRC-32 and size checked) around a 32 KiB window.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    *error = "gzip: cannot set up zlib";
    return false;
  }
  uint64_t in_at = 0;
  uint64_t in_released = 0;
  uint64_t out_size = 0;
  bool in_member = false;
  std::string failure;
  while (failure.empty()) {
    if (!in_member) {
      if (in_at == size) break;  // every member read
      if (!looks_like_gzip(data + in_at, size - in_at)) {
        failure = "gzip: no gzip member starts at compressed byte " + std::to_string(in_at);
        break;
      }
      inflateReset(&stream);
      in_member = true;
    }
    stream.next_in = const_cast<uint8_t*>(data + in_at);
    stream.avail_in = static_cast<uInt>(std::min<uint64_t>(size - in_at, UINT_MAX));
    stream.next_out = chunk.get();
    stream.avail_out = static_cast<uInt>(kInflateChunk);
    const uInt in_before = stream.avail_in;
    const int result = ::inflate(&stream, Z_NO_FLUSH);
    in_at += in_before - stream.avail_in;
    const size_t produced = kInflateChunk - stream.avail_out;
    if (out_size + produced > std::min(limit, room)) {
      expansion_limited_ = limit <= room;
      failure = limit <= room ? limit_message(limit, max_expanded_ == 0, in_at) : space_message(dir, room);
      break;
    }
    if (produced > 0 && !write_all(out.fd, chunk.get(), produced)) {
      failure = "gzip: cannot write the decompressed data to a temporary file in " + dir + ": " + std::strerror(errno);
      break;
    }
    out_size += produced;
    // The compressed file's pages are read once.
    if (mapped && in_at - in_released >= kReleaseStep) in_released = release_pages(data, in_released, in_at);
    if (result == Z_STREAM_END) {
      in_member = false;
      ++members_;
    } else if (result == Z_BUF_ERROR && in_at == size) {
      failure = "gzip: the file ends inside member " + std::to_string(members_ + 1) + " (truncated)";
    } else if (result != Z_OK && result != Z_BUF_ERROR) {
      failure = std::string("gzip: ") + (stream.msg != nullptr ? stream.msg : "corrupt data") +
                " in member " + std::to_string(members_ + 1) + " before compressed byte " + std::to_string(in_at);
    }
  }
  inflateEnd(&stream);
  if (!failure.empty()) {
    *error = failure;
    return false;
  }
  if (out_size == 0) return true;
  void* mapping = mmap(nullptr, out_size, PROT_READ, MAP_SHARED, out.fd, 0);
  if (mapping == MAP_FAILED) {
    *error = std::string("gzip: cannot map the decompressed data: ") + std::strerror(errno);
    return false;
  }
  madvise(mapping, out_size, MADV_SEQUENTIAL);
  data_ = static_cast<uint8_t*>(mapping);
  size_ = out_size;
  return true;
}

}  // namespace fasthprof
