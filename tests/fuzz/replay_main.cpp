// Drives a libFuzzer-style target without a fuzzing engine: replays every file of the given
// corpus folders, then feeds random mutations of them until --seconds have passed. A crash or a
// hang fails the test (meson's timeout catches hangs).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Input = std::vector<uint8_t>;

std::vector<Input> load_corpus(const std::vector<std::string>& folders) {
  std::vector<Input> inputs;
  for (const auto& folder : folders) {
    std::error_code error;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder, error)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  if (inputs.empty()) inputs.emplace_back();
  return inputs;
}

Input mutate(const Input& seed, const std::vector<Input>& corpus, std::mt19937_64& rng) {
  Input out = seed;
  int steps = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < steps; ++i) {
    size_t n = out.size();
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (n) out[rng() % n] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // set a byte to an interesting value
        if (n) {
          static const uint8_t kInteresting[] = {0, 1, 0x7f, 0x80, 0xff, ',', '=', ':', 'y', 'n', '0'};
          out[rng() % n] = kInteresting[rng() % sizeof(kInteresting)];
        }
        break;
      case 2:  // insert a random byte
        out.insert(out.begin() + static_cast<long>(n ? rng() % (n + 1) : 0), static_cast<uint8_t>(rng()));
        break;
      case 3:  // erase a range
        if (n) {
          size_t at = rng() % n;
          size_t len = 1 + rng() % std::min<size_t>(n - at, 16);
          out.erase(out.begin() + static_cast<long>(at), out.begin() + static_cast<long>(at + len));
        }
        break;
      case 4: {  // splice in a piece of another input
        const Input& other = corpus[rng() % corpus.size()];
        if (!other.empty()) {
          size_t from = rng() % other.size();
          size_t len = 1 + rng() % std::min<size_t>(other.size() - from, 64);
          size_t at = n ? rng() % (n + 1) : 0;
          out.insert(out.begin() + static_cast<long>(at), other.begin() + static_cast<long>(from),
                     other.begin() + static_cast<long>(from + len));
        }
        break;
      }
      case 5:  // truncate
        if (n) out.resize(rng() % n);
        break;
      case 6:  // duplicate a range
        if (n) {
          size_t at = rng() % n;
          size_t len = 1 + rng() % std::min<size_t>(n - at, 32);
          Input piece(out.begin() + static_cast<long>(at), out.begin() + static_cast<long>(at + len));
          out.insert(out.begin() + static_cast<long>(at), piece.begin(), piece.end());
        }
        break;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  uint64_t seed = std::random_device{}();
  std::vector<std::string> folders;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      folders.emplace_back(argv[i]);
    }
  }
  std::vector<Input> corpus = load_corpus(folders);
  // Before anything runs: a crash must leave the seed that reproduces it (--seed) in the log.
  std::printf("replaying %zu corpus inputs, then mutations for %g s (seed %llu)\n", corpus.size(), seconds,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  for (const Input& input : corpus) LLVMFuzzerTestOneInput(input.data(), input.size());

  std::mt19937_64 rng(seed);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    for (int batch = 0; batch < 256; ++batch) {
      Input input = mutate(corpus[rng() % corpus.size()], corpus, rng);
      LLVMFuzzerTestOneInput(input.data(), input.size());
      ++runs;
    }
  }
  std::printf("replayed %zu corpus inputs and %llu mutations\n", corpus.size(), static_cast<unsigned long long>(runs));
  return 0;
}
