// The bytes of an HPROF file for the reader: a plain file is mapped read-only; a gzip file (the
// layout `jcmd GC.heap_dump -gz=N` and fasthprof's gz=y write, or any other: one member or many)
// is decompressed whole into anonymous memory first, so that the reader and the verifier see the
// same bytes either way. Decompression uses zlib, never the writer's library (libdeflate), so
// that a bug on the writing side cannot hide itself here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fasthprof {

// Whether data starts with the gzip magic and the deflate method (1f 8b 08).
bool looks_like_gzip(const uint8_t* data, uint64_t size);

class HprofInput {
 public:
  HprofInput() = default;
  ~HprofInput();
  HprofInput(const HprofInput&) = delete;
  HprofInput& operator=(const HprofInput&) = delete;

  // Maps path, and decompresses it when it is gzip. On failure returns false with *error set
  // ("<strerror>", or "gzip: <what is wrong> at compressed byte N"). Allocates.
  bool open(const char* path, std::string* error);

  // Decompresses every gzip member of size bytes at data into this input (no file involved).
  bool inflate(const uint8_t* data, uint64_t size, std::string* error);

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Whether the file was gzip, and its size as stored.
  bool compressed() const { return compressed_; }
  uint64_t stored_size() const { return stored_size_; }
  // gzip members read (0 for a plain file).
  uint64_t members() const { return members_; }

 private:
  void release();

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mapping_size_ = 0;  // of data_'s mapping (a file's size, or the inflated capacity)
  bool compressed_ = false;
  uint64_t stored_size_ = 0;
  uint64_t members_ = 0;
};

}  // namespace fasthprof
