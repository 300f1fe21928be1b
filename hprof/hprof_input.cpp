#include "hprof_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace fasthprof {
namespace {

constexpr uint64_t kMinCapacity = uint64_t{1} << 20;

// A file mapped read-only for the time of one open().
struct FileMapping {
  void* data = MAP_FAILED;
  uint64_t size = 0;
  ~FileMapping() {
    if (data != MAP_FAILED) munmap(data, size);
  }
};

}  // namespace

bool looks_like_gzip(const uint8_t* data, uint64_t size) {
  return size >= 3 && data[0] == 0x1f && data[1] == 0x8b && data[2] == 8;
}

HprofInput::~HprofInput() { release(); }

void HprofInput::release() {
  if (data_ != nullptr) munmap(data_, mapping_size_);
  data_ = nullptr;
  size_ = mapping_size_ = 0;
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
    size_ = mapping_size_ = file.size;
    file.data = MAP_FAILED;
    return true;
  }
  return inflate(bytes, file.size, error);
}

bool HprofInput::inflate(const uint8_t* data, uint64_t size, std::string* error) {
  release();
  compressed_ = true;
  stored_size_ = size;
  members_ = 0;
  // HPROF compresses well: start at four times the input and grow by doubling.
  mapping_size_ = std::max(kMinCapacity, size * 4);
  void* mapped = mmap(nullptr, mapping_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    *error = std::string("no memory to decompress into: ") + std::strerror(errno);
    mapping_size_ = 0;
    return false;
  }
  data_ = static_cast<uint8_t*>(mapped);

  z_stream stream{};
  // 16 + 15: a gzip wrapper (header, CRC-32 and size checked) around a 32 KiB window.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    *error = "gzip: cannot set up zlib";
    return false;
  }
  uint64_t in_at = 0;
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
    if (size_ == mapping_size_) {
      void* grown = mremap(data_, mapping_size_, mapping_size_ * 2, MREMAP_MAYMOVE);
      if (grown == MAP_FAILED) {
        failure = std::string("no memory to decompress into: ") + std::strerror(errno);
        break;
      }
      data_ = static_cast<uint8_t*>(grown);
      mapping_size_ *= 2;
    }
    stream.next_in = const_cast<uint8_t*>(data + in_at);
    stream.avail_in = static_cast<uInt>(std::min<uint64_t>(size - in_at, UINT_MAX));
    stream.next_out = data_ + size_;
    stream.avail_out = static_cast<uInt>(std::min<uint64_t>(mapping_size_ - size_, UINT_MAX));
    const uInt in_before = stream.avail_in;
    const uInt out_before = stream.avail_out;
    const int result = ::inflate(&stream, Z_NO_FLUSH);
    in_at += in_before - stream.avail_in;
    size_ += out_before - stream.avail_out;
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
    release();
    return false;
  }
  return true;
}

}  // namespace fasthprof
