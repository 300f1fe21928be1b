// The bytes of an HPROF file for the reader, mapped read-only. A plain file is mapped as it is. A
// gzip file (the layout `jcmd GC.heap_dump -gz=N` and fasthprof's gz=y write, or any other: one
// member or many) is decompressed first, in pieces of 1 MiB, into a temporary file that has no name
// (O_TMPFILE, mode 0600, in $TMPDIR or else /tmp; it goes away with the input), which is then mapped
// like a plain file: the reader and the verifier see the same bytes either way, verbs that go back
// to earlier records (the verifier's second pass over a dump, names looked up after the pass) can,
// and memory does not grow with the file.
//
// A small gzip file can stand for a huge one (deflate reaches about 1000 to 1), and what the verbs
// keep grows with the decompressed records: decompression stops, with an error, once the data
// passes a limit (set_max_expanded; by default 100 times the compressed size, at least 256 MiB)
// or would leave less than a tenth of the temporary folder's space free when it started.
//
// A pass over the input calls release_before() as it goes: the pages behind it leave the process's
// resident memory (they stay in the page cache and come back on the next read), so that reading a
// file of several GiB takes tens of MiB of RSS, not the file's size.
//
// Decompression uses zlib, never the writer's library (libdeflate), so that a bug on the writing
// side cannot hide itself here.
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
  // ("<strerror>", "gzip: <what is wrong> at compressed byte N", "gzip: cannot write the
  // decompressed data to a temporary file in DIR: <strerror>", or a limit passed: then
  // expansion_limited() is true). Allocates.
  bool open(const char* path, std::string* error);

  // The most bytes a gzip file may decompress to; 0 restores the default (default_max_expanded).
  void set_max_expanded(uint64_t bytes) { max_expanded_ = bytes; }
  static uint64_t default_max_expanded(uint64_t compressed_size);
  // Whether the last open() or inflate() stopped at that limit (not at the temporary folder's space).
  bool expansion_limited() const { return expansion_limited_; }

  // Decompresses every gzip member of size bytes at data into this input (a temporary file, as open()).
  bool inflate(const uint8_t* data, uint64_t size, std::string* error);

  // The bytes before offset will not be read again soon: their pages leave this process's resident
  // memory (acted on every 32 MiB; a later read maps them again). Reads of any offset stay valid.
  void release_before(uint64_t offset);
  // The same for the whole pages of [from, to), at once: for a pass that goes back over bytes.
  void release_range(uint64_t from, uint64_t to);

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Whether the file was gzip, and its size as stored.
  bool compressed() const { return compressed_; }
  uint64_t stored_size() const { return stored_size_; }
  // gzip members read (0 for a plain file).
  uint64_t members() const { return members_; }

 private:
  void release();
  // inflate(), and with mapped the compressed bytes are a file mapping whose pages it may release.
  bool inflate_file(const uint8_t* data, uint64_t size, bool mapped, std::string* error);

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t released_ = 0;  // release_before() has let go of the pages before this offset
  bool compressed_ = false;
  uint64_t stored_size_ = 0;
  uint64_t members_ = 0;
  uint64_t max_expanded_ = 0;
  bool expansion_limited_ = false;
};

}  // namespace fasthprof
