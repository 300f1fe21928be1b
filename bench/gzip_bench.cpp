// gz=y: speed and compression ratio of the two Debian-packaged DEFLATE libraries on real dump
// bytes, in the layout gz=y writes (1 MiB blocks, one gzip member each). For every input file
// (plain or gzip HPROF; gzip is decompressed first), each round compresses the whole file once
// with every configuration in turn (zlib and libdeflate at each level, alternating, so that a
// noisy machine weighs on all of them alike), and the table gives per configuration the median
// MB/s of uncompressed input on one thread and the ratio (uncompressed / compressed bytes). Each
// configuration's output is decompressed once and compared with the input, so that a figure is
// never one of broken output.
//
// Usage: bench_gzip [--rounds N] [--levels 1,6] FILE...   (or FASTHPROF_GZIP_BENCH_INPUT=FILE)
// Without input it says so and exits 77 (skipped under meson).
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hprof_input.h"
#include "sink/gzip_member.h"

namespace {

using fasthprof::kGzipBlockSize;

// One way to turn a block into a gzip member: returns the member's length in out.
struct Config {
  std::string name;
  int level;
  std::function<size_t(const uint8_t*, size_t, bool, uint8_t*)> encode;
  size_t bound;
};

// zlib, raw deflate with our own gzip header and trailer, the same bytes around it as gz=y's.
class ZlibMembers {
 public:
  explicit ZlibMembers(int level) {
    if (deflateInit2(&stream_, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  }
  ~ZlibMembers() { deflateEnd(&stream_); }
  size_t bound() { return deflateBound(&stream_, kGzipBlockSize) + 64; }
  size_t encode(const uint8_t* data, size_t size, bool comment, uint8_t* out) {
    uint8_t* at = out;
    const uint8_t header[10] = {0x1f, 0x8b, 8, static_cast<uint8_t>(comment ? 0x10 : 0), 0, 0, 0, 0, 4, 3};
    std::memcpy(at, header, sizeof header);
    at += sizeof header;
    if (comment) {
      std::memcpy(at, fasthprof::kGzipBlockComment, sizeof fasthprof::kGzipBlockComment);
      at += sizeof fasthprof::kGzipBlockComment;
    }
    deflateReset(&stream_);
    stream_.next_in = const_cast<uint8_t*>(data);
    stream_.avail_in = static_cast<uInt>(size);
    stream_.next_out = at;
    stream_.avail_out = static_cast<uInt>(bound());
    if (deflate(&stream_, Z_FINISH) != Z_STREAM_END) std::abort();
    at = stream_.next_out;
    const uint32_t crc = static_cast<uint32_t>(crc32(0, data, static_cast<uInt>(size)));
    for (int i = 0; i < 4; ++i) *at++ = static_cast<uint8_t>(crc >> (8 * i));
    for (int i = 0; i < 4; ++i) *at++ = static_cast<uint8_t>(size >> (8 * i));
    return static_cast<size_t>(at - out);
  }

 private:
  z_stream stream_{};
};

// Compresses input block by block into out (grown as needed); returns the compressed size.
size_t compress_all(const Config& config, const uint8_t* input, size_t size, std::vector<uint8_t>* out) {
  out->resize(std::max(out->size(), (size / kGzipBlockSize + 1) * config.bound));
  size_t written = 0;
  for (size_t at = 0; at < size; at += kGzipBlockSize) {
    const size_t block = std::min(kGzipBlockSize, size - at);
    written += config.encode(input + at, block, at == 0, out->data() + written);
  }
  return written;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::vector<int> levels = {1, 3, 6};
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--levels") == 0 && i + 1 < argc) {
      levels.clear();
      for (const char* p = argv[++i]; *p != '\0';) {
        levels.push_back(std::atoi(p));
        while (*p != '\0' && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "usage: bench_gzip [--rounds N] [--levels 1,3,6] FILE...\n");
      return 2;
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty() && std::getenv("FASTHPROF_GZIP_BENCH_INPUT") != nullptr) {
    files.push_back(std::getenv("FASTHPROF_GZIP_BENCH_INPUT"));
  }
  if (files.empty()) {
    std::printf("bench_gzip: no input (give HPROF files, or FASTHPROF_GZIP_BENCH_INPUT): skipped\n");
    return 77;
  }

  std::vector<std::unique_ptr<ZlibMembers>> zlibs;
  std::vector<std::unique_ptr<fasthprof::GzipMemberEncoder>> deflaters;
  std::vector<Config> configs;
  for (int level : levels) {
    zlibs.push_back(std::make_unique<ZlibMembers>(level));
    ZlibMembers* z = zlibs.back().get();
    configs.push_back({"zlib", level, [z](const uint8_t* d, size_t n, bool c, uint8_t* o) { return z->encode(d, n, c, o); },
                       z->bound()});
    std::string error;
    deflaters.push_back(fasthprof::GzipMemberEncoder::create(level, &error));
    fasthprof::GzipMemberEncoder* e = deflaters.back().get();
    if (e == nullptr) {
      std::fprintf(stderr, "bench_gzip: %s\n", error.c_str());
      return 2;
    }
    configs.push_back({"libdeflate", level,
                       [e](const uint8_t* d, size_t n, bool c, uint8_t* o) { return e->encode(d, n, c, o); },
                       e->bound(kGzipBlockSize)});
  }

  for (const std::string& path : files) {
    fasthprof::HprofInput input;
    std::string error;
    if (!input.open(path.c_str(), &error)) {
      std::fprintf(stderr, "bench_gzip: %s: %s\n", path.c_str(), error.c_str());
      return 2;
    }
    std::printf("%s: %.1f MB of HPROF, %d rounds, alternating\n", path.c_str(), input.size() / 1e6, rounds);
    std::vector<std::vector<double>> seconds(configs.size());
    std::vector<size_t> compressed(configs.size());
    std::vector<uint8_t> out;
    for (int round = 0; round < rounds; ++round) {
      for (size_t c = 0; c < configs.size(); ++c) {
        const auto start = std::chrono::steady_clock::now();
        compressed[c] = compress_all(configs[c], input.data(), input.size(), &out);
        seconds[c].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (round == 0) {
          fasthprof::HprofInput check;
          if (!check.inflate(out.data(), compressed[c], &error) || check.size() != input.size() ||
              std::memcmp(check.data(), input.data(), input.size()) != 0) {
            std::fprintf(stderr, "bench_gzip: %s level %d: output does not decompress to the input: %s\n",
                         configs[c].name.c_str(), configs[c].level, error.c_str());
            return 1;
          }
        }
      }
    }
    std::printf("  %-11s %5s %10s %8s %14s\n", "library", "level", "MB/s", "ratio", "compressed MB");
    for (size_t c = 0; c < configs.size(); ++c) {
      std::printf("  %-11s %5d %10.0f %8.2f %14.1f\n", configs[c].name.c_str(), configs[c].level,
                  input.size() / 1e6 / median(seconds[c]), static_cast<double>(input.size()) / compressed[c],
                  compressed[c] / 1e6);
    }
  }
  return 0;
}
