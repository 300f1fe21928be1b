#include "cli.h"

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstring>

namespace fasthprof::cli {

int fail(const char* verb, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  std::fprintf(stderr, "fasthprof %s: %s\n", verb, message);
  return kExitBadInput;
}

bool Args::has(std::string_view name) const {
  for (const auto& option : options) {
    if (option.first == name) return true;
  }
  return false;
}

std::string_view Args::value(std::string_view name, std::string_view fallback) const {
  std::string_view found = fallback;
  for (const auto& option : options) {
    if (option.first == name) found = option.second;
  }
  return found;
}

std::vector<std::string_view> Args::values(std::string_view name) const {
  std::vector<std::string_view> found;
  for (const auto& option : options) {
    if (option.first == name) found.push_back(option.second);
  }
  return found;
}

bool parse_args(const char* verb, int argc, char** argv, const std::vector<std::string_view>& flags,
                const std::vector<std::string_view>& valued, Args* args) {
  auto listed = [](const std::vector<std::string_view>& names, std::string_view name) {
    for (std::string_view known : names) {
      if (known == name) return true;
    }
    return false;
  };
  bool operands_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (operands_only || arg.size() < 2 || arg[0] != '-') {
      args->operands.push_back(arg);
      continue;
    }
    if (arg == "--") {
      operands_only = true;
    } else if (arg == "--help" || arg == "-h") {
      args->help = true;
    } else if (arg == "-o" || arg == "--output") {
      if (i + 1 == argc) return fail(verb, "%s needs a file name (see fasthprof %s --help)", argv[i], verb), false;
      args->output = argv[++i];
    } else if (listed(flags, arg)) {
      args->options.emplace_back(arg, std::string_view());
    } else if (size_t eq = arg.find('='); eq != std::string_view::npos && listed(valued, arg.substr(0, eq))) {
      args->options.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
    } else if (listed(valued, arg)) {
      if (i + 1 == argc) return fail(verb, "%s needs a value (see fasthprof %s --help)", argv[i], verb), false;
      args->options.emplace_back(arg, argv[++i]);
    } else {
      fail(verb, "unknown option %s (see fasthprof %s --help)", argv[i], verb);
      return false;
    }
  }
  return true;
}

bool parse_count(std::string_view text, uint64_t* value) {
  if (text.empty() || text.size() > 18) return false;
  uint64_t result = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    result = result * 10 + static_cast<uint64_t>(c - '0');
  }
  *value = result;
  return true;
}

bool parse_size(std::string_view text, uint64_t* value) {
  unsigned shift = 0;
  if (!text.empty()) {
    const size_t unit = std::string_view("KMGT").find(static_cast<char>(text.back() & ~0x20));
    if (unit != std::string_view::npos) {
      shift = 10 * static_cast<unsigned>(unit + 1);
      text.remove_suffix(1);
    }
  }
  uint64_t count = 0;
  if (!parse_count(text, &count) || (shift > 0 && count > (UINT64_MAX >> shift))) return false;
  *value = count << shift;
  return true;
}

Output::~Output() {
  if (file_ != nullptr && file_ != stdout) std::fclose(file_);
}

bool Output::open(const char* verb, const char* path) {
  if (path == nullptr || std::strcmp(path, "-") == 0) return true;
  FILE* file = std::fopen(path, "w");
  if (file == nullptr) {
    fail(verb, "cannot create %s: %s", path, std::strerror(errno));
    return false;
  }
  file_ = file;
  path_ = path;
  return true;
}

bool Output::close(const char* verb) {
  const bool failed = std::ferror(file_) != 0 || std::fflush(file_) != 0;
  const int flush_error = errno;
  bool closed = true;
  if (file_ != stdout) {
    closed = std::fclose(file_) == 0;
    file_ = nullptr;
  }
  if (failed || !closed) {
    fail(verb, "cannot write %s: %s", path_ != nullptr ? path_ : "standard output",
         std::strerror(failed ? flush_error : errno));
    return false;
  }
  return true;
}

bool looks_like_text_profile(const uint8_t* data, uint64_t size) {
  static constexpr char kText[] = "JAVA PROFILE 1.0.1, created";
  return size >= sizeof(kText) - 1 && std::memcmp(data, kText, sizeof(kText) - 1) == 0;
}

namespace {

// Opens path into input with args' --max-expanded. False after the one-line message.
bool open_input(const char* verb, const char* path, const Args& args, HprofInput* input) {
  uint64_t limit = 0;
  if (args.has(kMaxExpandedOption)) {
    if (!parse_size(args.value(kMaxExpandedOption), &limit) || limit == 0) {
      return fail(verb, "--max-expanded takes a size in bytes, with K, M, G or T: 512M"), false;
    }
  }
  input->set_max_expanded(limit);
  std::string error;
  if (input->open(path, &error)) return true;
  if (input->expansion_limited()) {
    fail(verb, "%s: %s; --max-expanded SIZE allows more", path, error.c_str());
  } else if (input->compressed()) {
    fail(verb, "%s: %s", path, error.c_str());
  } else {
    fail(verb, "cannot read %s: %s", path, error.c_str());
  }
  return false;
}

}  // namespace

std::unique_ptr<Loaded> load(const char* verb, const char* path, const Args& args, bool text_too, bool keep_pages,
                             HeapDumpObserver* observer) {
  auto loaded = std::make_unique<Loaded>();
  if (!open_input(verb, path, args, &loaded->input)) return nullptr;
  const uint8_t* data = loaded->input.data();
  const uint64_t size = loaded->input.size();
  if (text_too && (looks_like_text_profile(data, size) || looks_like_old_profile(data, size))) {
    loaded->text = true;
    std::string error;
    if (!loaded->text_profile.load(data, size, &error)) {
      fail(verb, "%s: %s%s", path, error.c_str(), loaded->input.compressed() ? " (of the decompressed data)" : "");
      return nullptr;
    }
    return loaded;
  }
  if (looks_like_text_profile(data, size)) {
    fail(verb, "%s is a text profile (format=a); %s reads binary files (format=b, or the JDK's .hprof)", path, verb);
    return nullptr;
  }
  ReadError read_error;
  if (!loaded->model.load(data, size, &read_error, keep_pages ? nullptr : &loaded->input, observer)) {
    fail(verb, "%s: %s at byte %" PRIu64 "%s", path, read_error.message.c_str(), read_error.offset,
         loaded->input.compressed() ? " (of the decompressed data)" : "");
    return nullptr;
  }
  return loaded;
}

std::string html_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace fasthprof::cli
