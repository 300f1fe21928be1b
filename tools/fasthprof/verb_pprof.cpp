// `fasthprof pprof FILE -o out.pb.gz`: the CPU samples or times, or the allocation sites, as a
// gzipped pprof profile (the profile.proto messages Debian's golang-github-google-pprof-dev ships,
// encoded by Debian's protobuf), which `go tool pprof`, Pyroscope, Parca and Grafana read.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "profile.h"
#include "profile.pb.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kPprofUsage[] =
    "usage: fasthprof pprof [--cpu | --sites | --monitor] [--section N]\n"
    "                       [--interval MS] -o OUT.pb.gz FILE\n"
    "Writes the samples of a file in Google's pprof format (profile.proto, gzipped),\n"
    "for `go tool pprof`, Pyroscope, Parca, Grafana:\n"
    "  --cpu    the CPU sections added up (the default when the file has one): one\n"
    "           sample per trace with two sample types, samples/count and\n"
    "           cpu/nanoseconds (the default, as fleet tools take CPU profiles), the\n"
    "           period cpu/nanoseconds and the duration up to the last section.\n"
    "           cpu=samples: each sample stands for the sampling interval, which the\n"
    "           file does not record: --interval MS, the agent's interval= (default\n"
    "           10); cpu=times: the milliseconds measured (samples/count then counts\n"
    "           the calls' milliseconds, period 1 ms)\n"
    "  --sites  the last ALLOC SITES section: one sample per site, four sample types\n"
    "           as Go's heap profiles have them: alloc_objects, alloc_space,\n"
    "           inuse_objects, inuse_space (the default), the period type\n"
    "           space/bytes; the allocated class is the sample's label \"class\"\n"
    "           and its innermost frame\n"
    "  --monitor  MONITOR TIME (monitor=y): contentions/count and delay/nanoseconds\n"
    "           (the default), as Go's mutex profiles, the monitor's class innermost\n"
    "  --section N  the Nth section instead\n"
    "With thread=y each sample has its thread's name as the label \"thread\"\n"
    "(go tool pprof -tagfocus=thread=main).\n"
    "Text files (format=a, cpu=old): CPU SAMPLES as above; CPU TIME and cpu=old as\n"
    "calls/count and cpu/nanoseconds (a row's share of the total: the file prints no\n"
    "other time); frames by name only; the start and duration from the file's\n"
    "dates, to the second.\n"
    "Frames become locations with their function (class.method, signature, source\n"
    "file) and line where the trace has one.\n"
    "  -o OUT   where the profile goes (required: it is binary)\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done, 2 bad usage or bad input (one message on stderr).\n";

namespace {

namespace pb = perftools::profiles;

// Length of the well-formed UTF-8 sequence at text[at], or 0 for none.
size_t utf8_sequence(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
  }
  if (length == 0 || at + length > text.size()) return 0;
  for (size_t i = at + 1; i < at + length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
  }
  const unsigned char next = byte(at + 1);
  // No overlong forms, no surrogates, nothing past U+10FFFF.
  if ((lead == 0xe0 && next < 0xa0) || (lead == 0xed && next > 0x9f) || (lead == 0xf0 && next < 0x90) ||
      (lead == 0xf4 && next > 0x8f)) {
    return 0;
  }
  return length;
}

// A name of the file as pprof's strings must be, UTF-8: the JVM's modified UTF-8 (NUL as C0 80, a
// supplementary character as two 3-byte surrogates) decoded, any other ill-formed byte U+FFFD.
// Go's reader refuses a profile whose strings are not UTF-8.
std::string utf8_text(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  std::string out;
  for (size_t at = 0; at < text.size();) {
    if (const size_t length = utf8_sequence(text, at); length > 0) {
      out.append(text.substr(at, length));
      at += length;
    } else if (byte(at) == 0xc0 && at + 1 < text.size() && byte(at + 1) == 0x80) {
      out += '\0';
      at += 2;
    } else if (at + 6 <= text.size() && byte(at) == 0xed && (byte(at + 1) & 0xf0) == 0xa0 &&
               (byte(at + 2) & 0xc0) == 0x80 && byte(at + 3) == 0xed && (byte(at + 4) & 0xf0) == 0xb0 &&
               (byte(at + 5) & 0xc0) == 0x80) {
      const uint32_t high = ((byte(at + 1) & 0x0fu) << 6) | (byte(at + 2) & 0x3fu);
      const uint32_t low = ((byte(at + 4) & 0x0fu) << 6) | (byte(at + 5) & 0x3fu);
      const uint32_t code = 0x10000 + (high << 10) + low;
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
      at += 6;
    } else {
      out += "\xef\xbf\xbd";
      ++at;
    }
  }
  return out;
}

class Builder {
 public:
  explicit Builder(const HprofModel& model) : model_(model) { profile_.add_string_table(""); }

  int64_t text(const std::string& value) {
    auto found = strings_.find(value);
    if (found != strings_.end()) return found->second;
    const int64_t index = profile_.string_table_size();
    profile_.add_string_table(utf8_text(value));
    strings_.emplace(value, index);
    return index;
  }

  void sample_type(const char* type, const char* unit) {
    pb::ValueType* value = profile_.add_sample_type();
    value->set_type(text(type));
    value->set_unit(text(unit));
  }

  // Location of a frame of the file (one per frame ID).
  uint64_t location(uint64_t frame_id) {
    auto found = locations_.find(frame_id);
    if (found != locations_.end()) return found->second;
    const FrameInfo* frame = model_.frame(frame_id);
    const std::string name = model_.frame_name(frame_id, false);
    const uint64_t function_id = function(name, frame != nullptr ? std::string(frame->signature) : std::string(),
                                          frame != nullptr ? std::string(frame->source) : std::string());
    pb::Location* location = profile_.add_location();
    location->set_id(profile_.location_size());
    pb::Line* line = location->add_line();
    line->set_function_id(function_id);
    if (frame != nullptr && frame->line > 0) line->set_line(frame->line);
    locations_.emplace(frame_id, location->id());
    return location->id();
  }

  // Location of a pseudo-frame (an allocated class, an empty trace).
  uint64_t pseudo_location(const std::string& name) {
    auto found = pseudo_.find(name);
    if (found != pseudo_.end()) return found->second;
    pb::Location* location = profile_.add_location();
    location->set_id(profile_.location_size());
    location->add_line()->set_function_id(function(name, "", ""));
    pseudo_.emplace(name, location->id());
    return location->id();
  }

  // A sample of a trace's frames, innermost first as pprof orders them; leaf: a pseudo-frame
  // inside them (the allocated class), or nullptr.
  pb::Sample* sample(uint32_t trace_serial, const std::string* leaf) {
    pb::Sample* sample = profile_.add_sample();
    if (leaf != nullptr) sample->add_location_id(pseudo_location(*leaf));
    const TraceInfo* trace = model_.trace(trace_serial);
    if (trace == nullptr || trace->frame_count == 0) {
      sample->add_location_id(pseudo_location(trace == nullptr ? "<trace " + std::to_string(trace_serial) + ">"
                                                                : "<empty trace>"));
      return sample;
    }
    for (uint32_t i = 0; i < trace->frame_count; ++i) sample->add_location_id(location(model_.trace_frame(*trace, i)));
    // thread=y: the trace's thread, by name (its serial when no START THREAD names it).
    if (trace->thread_serial != 0) {
      std::string name(model_.thread_name(trace->thread_serial));
      if (name.empty()) name = std::to_string(trace->thread_serial);
      pb::Label* label = sample->add_label();
      label->set_key(text("thread"));
      label->set_str(text(name));
    }
    return sample;
  }

  pb::Profile& profile() { return profile_; }

 private:
  uint64_t function(const std::string& name, const std::string& signature, const std::string& source) {
    const std::string key = name + '\n' + signature + '\n' + source;
    auto found = functions_.find(key);
    if (found != functions_.end()) return found->second;
    pb::Function* function = profile_.add_function();
    function->set_id(profile_.function_size());
    function->set_name(text(name));
    function->set_system_name(text(signature.empty() ? name : name + signature));
    if (!source.empty()) function->set_filename(text(source));
    functions_.emplace(key, function->id());
    return function->id();
  }

  const HprofModel& model_;
  pb::Profile profile_;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<uint64_t, uint64_t> locations_;
  std::unordered_map<std::string, uint64_t> pseudo_;
  std::unordered_map<std::string, uint64_t> functions_;
};

bool write_gzip(const char* path, const std::string& bytes) {
  gzFile file = gzopen(path, "wb6");
  if (file == nullptr) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes.size() - done, 1 << 20));
    if (gzwrite(file, bytes.data() + done, chunk) != static_cast<int>(chunk)) {
      gzclose(file);
      return false;
    }
    done += chunk;
  }
  return gzclose(file) == Z_OK;
}


// A sample of a folded stack ("a;b;c", outermost first) whose frames are names only (a text
// file), innermost first as pprof orders them. A thread root ("thread NAME") becomes the label
// "thread" instead of a frame.
pb::Sample* folded_sample(Builder* builder, std::string_view stack, bool thread_root) {
  pb::Sample* sample = builder->profile().add_sample();
  if (thread_root) {
    const size_t end = std::min(stack.find(';'), stack.size());
    pb::Label* label = sample->add_label();
    label->set_key(builder->text("thread"));
    label->set_str(builder->text(std::string(stack.substr(7, end - 7))));
    stack.remove_prefix(std::min(end + 1, stack.size()));
  }
  std::vector<std::string_view> frames;
  for (size_t start = 0;;) {
    const size_t end = std::min(stack.find(';', start), stack.size());
    frames.push_back(stack.substr(start, end - start));
    if (end == stack.size()) break;
    start = end + 1;
  }
  for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
    sample->add_location_id(builder->pseudo_location(std::string(*frame)));
  }
  return sample;
}

// The profile of a text file: CPU SAMPLES (samples and cpu nanoseconds, as binary files), CPU TIME
// and cpu=old (calls and cpu nanoseconds), MONITOR TIME (contentions and delay nanoseconds, as Go's
// mutex profiles). False after a message.
// The profile's start and duration from a text file's dates (to the second): from the file's first
// line to the BEGIN line of the section drawn (the last one when all are added up). Neither is
// set when the file has no readable date (cpu=old has no section, so no duration).
void set_text_times(const TextProfile& text, Kind kind, uint64_t section, pb::Profile* profile) {
  const int64_t created = text.created_seconds();
  if (created <= 0) return;
  profile->set_time_nanos(created * 1000000000);
  std::vector<int64_t> ends;
  for (const TextRankedSection& ranked : text.sections()) {
    const bool monitor = ranked.kind == TextSectionKind::kMonitorTime;
    if (monitor == (kind == Kind::kMonitor)) ends.push_back(ranked.written_seconds);
  }
  if (ends.empty()) return;
  const int64_t end = section == 0 || section > ends.size() ? ends.back() : ends[section - 1];
  if (end >= created) profile->set_duration_nanos((end - created) * 1000000000);
}

bool text_profile(const Loaded& loaded, const char* path, Kind kind, uint64_t section, uint64_t interval_ms,
                  Builder* builder) {
  Table table;
  if (!build_table("pprof", path, loaded, kind, Grouping::kStack, section, &table, StackRoots{true, false})) return false;
  pb::Profile& profile = builder->profile();
  const bool timed = table.metrics[0] == "us" || kind == Kind::kMonitor;
  const char* count_type = kind == Kind::kMonitor ? "contentions" : timed ? "calls" : "samples";
  const char* time_type = kind == Kind::kMonitor ? "delay" : "cpu";
  builder->sample_type(count_type, "count");
  builder->sample_type(time_type, "nanoseconds");
  profile.set_default_sample_type(builder->text(time_type));
  pb::ValueType* period_type = profile.mutable_period_type();
  period_type->set_type(builder->text(timed ? count_type : "cpu"));
  period_type->set_unit(builder->text(timed ? "count" : "nanoseconds"));
  profile.set_period(timed ? 1 : static_cast<int64_t>(interval_ms) * 1000000);
  set_text_times(loaded.text_profile, kind, section, &profile);
  const size_t count_column = kind == Kind::kMonitor || timed ? 2 : 0;
  for (const auto& [stack, values] : table.rows) {
    if (values[0] == 0 && values[count_column] == 0) continue;
    pb::Sample* sample = folded_sample(builder, stack, table.thread_roots);
    sample->add_value(static_cast<int64_t>(values[count_column]));
    sample->add_value(static_cast<int64_t>(timed ? values[0] * 1000 : values[0] * interval_ms * 1000000));
  }
  return true;
}

// The last (or the section-th) SITES section as heap samples. False after a message.
bool sites_profile(const char* path, const HprofModel& model, uint64_t section, Builder* builder) {
  builder->sample_type("alloc_objects", "count");
  builder->sample_type("alloc_space", "bytes");
  builder->sample_type("inuse_objects", "count");
  builder->sample_type("inuse_space", "bytes");
  builder->profile().set_default_sample_type(builder->text("inuse_space"));
  // As Go's heap profiles: the period in space/bytes; every allocation is counted (sample=
  // scales its counts up to every allocation already), so each sample stands for itself.
  pb::ValueType* period_type = builder->profile().mutable_period_type();
  period_type->set_type(builder->text("space"));
  period_type->set_unit(builder->text("bytes"));
  builder->profile().set_period(1);
  const size_t count = model.sites().size();
  if (section > count) return fail("pprof", "%s holds %zu SITES sections, not %" PRIu64, path, count, section), false;
  // One sample per site (trace and class), for the same reason.
  std::map<std::tuple<uint32_t, uint8_t, uint32_t>, std::array<uint64_t, 4>> by_site;
  for (const SiteRow& row : model.sites()[section == 0 ? count - 1 : section - 1].rows) {
    std::array<uint64_t, 4>& sum = by_site[{row.trace_serial, row.kind, row.class_serial}];
    sum[0] += row.alloc_instances;
    sum[1] += row.alloc_bytes;
    sum[2] += row.live_instances;
    sum[3] += row.live_bytes;
  }
  for (const auto& [site, values] : by_site) {
    const auto& [trace_serial, kind, class_serial] = site;
    const std::string class_name = model.site_class_name(SiteRow{kind, class_serial});
    // The allocated class as the innermost frame, as collapsed and flame draw it.
    pb::Sample* sample = builder->sample(trace_serial, &class_name);
    for (const uint64_t value : values) sample->add_value(static_cast<int64_t>(value));
    pb::Label* label = sample->add_label();
    label->set_key(builder->text("class"));
    label->set_str(builder->text(class_name));
  }
  return true;
}

// pprof of a text file, written to args.output.
int text_file(const Args& args, const char* path, const Loaded& loaded, uint64_t section, uint64_t interval_ms) {
  Kind kind = Kind::kCpu;
  if (!choose_kind("pprof", path, args, loaded, &kind)) return kExitBadInput;
  Builder builder(loaded.model);
  if (!text_profile(loaded, path, kind, section, interval_ms, &builder)) return kExitBadInput;
  std::string bytes;
  if (!builder.profile().SerializeToString(&bytes)) return fail("pprof", "cannot encode the profile");
  if (!write_gzip(args.output, bytes)) return fail("pprof", "cannot write %s", args.output);
  return kExitOk;
}

}  // namespace

int pprof_main(int argc, char** argv) {
  Args args;
  if (!parse_args("pprof", argc, argv, {"--cpu", "--sites", "--monitor"}, {"--section", "--interval", kMaxExpandedOption}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kPprofUsage, stdout);
    return kExitOk;
  }
  uint64_t section = 0;
  if (args.has("--section") && (!parse_count(args.value("--section"), &section) || section == 0)) {
    return fail("pprof", "--section takes a number from 1");
  }
  uint64_t interval_ms = 10;
  if (args.has("--interval") && (!parse_count(args.value("--interval"), &interval_ms) || interval_ms == 0 ||
                                 interval_ms > 3600000)) {
    return fail("pprof", "--interval takes milliseconds, 1 to 3600000 (the agent's interval=)");
  }
  if (args.operands.size() != 1) return fail("pprof", "needs one FILE (see fasthprof pprof --help)");
  if (args.output == nullptr) return fail("pprof", "needs -o OUT.pb.gz (the profile is binary)");
  const std::string path(args.operands[0]);
  std::unique_ptr<Loaded> loaded = load("pprof", path.c_str(), args, true);
  if (loaded == nullptr) return kExitBadInput;
  const HprofModel& model = loaded->model;
  if (loaded->text) return text_file(args, path.c_str(), *loaded, section, interval_ms);
  if (args.has("--monitor")) return fail("pprof", "%s: MONITOR TIME is in text files only (monitor=y)", path.c_str());
  if (args.has("--cpu") && args.has("--sites")) return fail("pprof", "--cpu and --sites: give one");
  const bool sites = args.has("--sites") || (!args.has("--cpu") && !has_kind(model, Kind::kCpu));
  if (!sites && !has_kind(model, Kind::kCpu)) return fail("pprof", "%s holds no CPU sections", path.c_str());
  if (sites && !has_kind(model, Kind::kSites)) {
    return fail("pprof", "%s holds no CPU SAMPLES and no ALLOC SITES section", path.c_str());
  }
  Builder builder(model);
  pb::Profile& profile = builder.profile();
  // 0 for a header time past what nanoseconds since 1970 hold (the year 2262).
  const uint64_t millis = model.header().timestamp_millis;
  profile.set_time_nanos(millis <= INT64_MAX / 1000000 ? static_cast<int64_t>(millis) * 1000000 : 0);
  if (!sites) {
    const bool times = model.cpu_is_times();
    // What one count stands for: a sample of interval= ms, or one measured millisecond.
    const int64_t count_nanos = static_cast<int64_t>(times ? 1 : interval_ms) * 1000000;
    builder.sample_type("samples", "count");
    builder.sample_type("cpu", "nanoseconds");
    profile.set_default_sample_type(builder.text("cpu"));
    pb::ValueType* period_type = profile.mutable_period_type();
    period_type->set_type(builder.text("cpu"));
    period_type->set_unit(builder.text("nanoseconds"));
    profile.set_period(count_nanos);
    const size_t count = model.cpu().size();
    if (section > count) return fail("pprof", "%s holds %zu CPU sections, not %" PRIu64, path.c_str(), count, section);
    // From the start of the profile (the header) to the section written last.
    profile.set_duration_nanos(static_cast<int64_t>(model.cpu()[section == 0 ? count - 1 : section - 1].time_micros) * 1000);
    // One sample per trace: a row's stack costs a location per frame, and rows may name one
    // deep trace many times over.
    std::map<uint32_t, uint64_t> by_trace;
    for (size_t i = section == 0 ? 0 : section - 1; i < (section == 0 ? count : section); ++i) {
      for (const CpuRow& row : model.cpu()[i].rows) by_trace[row.trace_serial] += row.count;
    }
    for (const auto& [serial, samples] : by_trace) {
      if (samples == 0) continue;
      pb::Sample* sample = builder.sample(serial, nullptr);
      sample->add_value(static_cast<int64_t>(samples));
      sample->add_value(static_cast<int64_t>(samples) * count_nanos);
    }
  } else {
    if (!sites_profile(path.c_str(), model, section, &builder)) return kExitBadInput;
  }
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) return fail("pprof", "cannot encode the profile");
  if (!write_gzip(args.output, bytes)) return fail("pprof", "cannot write %s", args.output);
  return kExitOk;
}

}  // namespace fasthprof::cli
