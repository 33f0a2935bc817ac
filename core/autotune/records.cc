#include "core/autotune/records.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/support/error.h"
#include "core/support/statistics.h"
#include "core/support/version.h"

namespace agate {
namespace autotune {

using nlohmann::json;

std::string RecordToJson(const TuningRecord& r) {
  json j;
  j["task"] = r.task;
  json knobs = json::object();
  for (const auto& [name, value] : r.knobs) knobs[name] = value;
  j["knobs"] = knobs;
  if (r.ok) {
    j["ms"] = r.ms;
  } else {
    j["ms"] = nullptr;
  }
  j["error"] = r.error;
  j["target"] = r.target;
  j["agate"] = r.agate_version;
  j["knob_space"] = r.knob_space_version;
  j["time"] = r.time;
  j["threads"] = r.threads;
  if (r.in_model) j["in_model"] = true;
  return j.dump();
}

TuningRecord RecordFromJson(const std::string& line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  AGATE_REQUIRE(j.is_object(), kInvalidArgument) << "not a JSON object";
  auto field = [&](const char* name, bool (json::*is)() const noexcept, const char* type) -> const json& {
    auto it = j.find(name);
    AGATE_REQUIRE(it != j.end(), kInvalidArgument) << "no \"" << name << "\" field";
    AGATE_REQUIRE(((*it).*is)(), kInvalidArgument) << "\"" << name << "\" is not " << type;
    return *it;
  };
  TuningRecord r;
  r.task = field("task", &json::is_string, "a string").get<std::string>();
  for (const auto& [name, value] : field("knobs", &json::is_object, "an object").items()) {
    AGATE_REQUIRE(value.is_number_integer(), kInvalidArgument) << "knob \"" << name << "\" is not an integer";
    r.knobs[name] = value.get<int64_t>();
  }
  auto ms = j.find("ms");
  AGATE_REQUIRE(ms != j.end(), kInvalidArgument) << "no \"ms\" field";
  AGATE_REQUIRE(ms->is_null() || ms->is_number(), kInvalidArgument) << "\"ms\" is neither a number nor null";
  r.ok = ms->is_number();
  if (r.ok) {
    r.ms = ms->get<double>();
    AGATE_REQUIRE(r.ms >= 0, kInvalidArgument) << "\"ms\" is negative";
  }
  r.error = field("error", &json::is_string, "a string").get<std::string>();
  r.target = field("target", &json::is_string, "a string").get<std::string>();
  r.agate_version = field("agate", &json::is_string, "a string").get<std::string>();
  r.knob_space_version = field("knob_space", &json::is_number_integer, "an integer").get<int>();
  r.time = field("time", &json::is_number_integer, "an integer").get<int64_t>();
  if (auto threads = j.find("threads"); threads != j.end()) {  // optional
    AGATE_REQUIRE(threads->is_number_integer(), kInvalidArgument) << "\"threads\" is not an integer";
    r.threads = threads->get<int>();
  }
  if (auto in_model = j.find("in_model"); in_model != j.end()) {  // optional
    AGATE_REQUIRE(in_model->is_boolean(), kInvalidArgument) << "\"in_model\" is not a boolean";
    r.in_model = in_model->get<bool>();
  }
  return r;
}

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  AGATE_REQUIRE(fd_ >= 0, kIo) << "cannot open tuning records '" << path << "' for appending: " << std::strerror(errno);
  struct stat st;
  if (::fstat(fd_, &st) == 0 && st.st_size > 0) {
    int rfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char last = '\n';
    if (rfd >= 0) {
      if (::pread(rfd, &last, 1, st.st_size - 1) != 1) last = '\n';
      ::close(rfd);
    }
    needs_newline_ = last != '\n';
  }
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void RecordWriter::Append(const TuningRecord& record) {
  std::string line = (needs_newline_ ? "\n" : "") + RecordToJson(record) + "\n";
  needs_newline_ = false;
  ssize_t n;
  do {
    n = ::write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  AGATE_REQUIRE(n == static_cast<ssize_t>(line.size()), kIo)
      << "cannot append to tuning records '" << path_ << "': " << (n < 0 ? std::strerror(errno) : "short write");
  AGATE_REQUIRE(::fsync(fd_) == 0, kIo) << "cannot sync tuning records '" << path_ << "': " << std::strerror(errno);
}

RecordFile ReadRecords(const std::string& path, const std::string& target) {
  std::ifstream in(path, std::ios::binary);
  AGATE_REQUIRE(in.good(), kNotFound) << "tuning records '" << path << "': cannot open the file ("
                                      << std::strerror(errno) << ")";
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  RecordFile file;
  size_t start = 0;
  int line_number = 0;
  bool warned_version = false;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    bool complete = end != std::string::npos;
    std::string line = text.substr(start, complete ? end - start : std::string::npos);
    start = complete ? end + 1 : text.size();
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = "tuning records '" + path + "' line " + std::to_string(line_number);
    TuningRecord record;
    try {
      record = RecordFromJson(line);
    } catch (const Error& e) {
      file.warnings.push_back(where + (complete ? ": " : " (the last line, truncated: a run killed while writing?): ") +
                              e.message() + "; skipped");
      continue;
    }
    AGATE_REQUIRE(record.knob_space_version == ops::kKnobSpaceVersion, kInvalidArgument)
        << where << ": made for knob-space version " << record.knob_space_version << ", this agate's is "
        << ops::kKnobSpaceVersion << " (re-tune; no record of this file is applied)";
    AGATE_REQUIRE(target.empty() || record.target == target, kInvalidArgument)
        << where << ": made for target '" << record.target << "', not '" << target
        << "' (tune for this target; no record of this file is applied)";
    if (record.agate_version != AGATE_VERSION_STRING && !warned_version) {
      file.warnings.push_back(where + ": made by agate " + record.agate_version + ", this is " + AGATE_VERSION_STRING +
                              "; its knob space is the same, so its records apply");
      warned_version = true;
    }
    file.records.push_back(std::move(record));
  }
  return file;
}


std::map<std::string, TuningRecord> BestPerTask(const std::vector<TuningRecord>& records) {
  // task -> config -> (its first ok record, its times)
  std::map<std::string, std::map<ops::KnobConfig, std::pair<const TuningRecord*, std::vector<double>>>> by_config;
  std::set<std::string> timed_in_model;
  for (const TuningRecord& r : records)
    if (r.ok && r.in_model) timed_in_model.insert(r.task);
  for (const TuningRecord& r : records) {
    if (!r.ok || r.in_model != (timed_in_model.count(r.task) > 0)) continue;
    auto& entry = by_config[r.task][r.knobs];
    if (entry.first == nullptr) entry.first = &r;
    entry.second.push_back(r.ms);
  }
  std::map<std::string, TuningRecord> best;
  for (const auto& [task, configs] : by_config) {
    bool any_repeated = false;
    for (const auto& [knobs, entry] : configs) any_repeated |= entry.second.size() > 1;
    for (const auto& [knobs, entry] : configs) {
      if (any_repeated && entry.second.size() < 2) continue;
      double ms = Median(entry.second);
      auto it = best.find(task);
      if (it != best.end() && it->second.ms <= ms) continue;
      TuningRecord r = *entry.first;
      r.ms = ms;
      best[task] = r;
    }
  }
  return best;
}

double MedianMs(const std::vector<TuningRecord>& records, const std::string& task, const ops::KnobConfig& knobs) {
  std::vector<double> ms;
  for (const TuningRecord& r : records)
    if (r.ok && r.task == task && r.knobs == knobs) ms.push_back(r.ms);
  return ms.empty() ? 0.0 : Median(ms);
}

ops::KnobConfig KnobsToApply(const TuningRecord& record) {
  ops::KnobConfig knobs = record.knobs;
  if (record.threads != 1) return knobs;
  for (auto it = knobs.begin(); it != knobs.end();) it = ops::IsThreadSplitKnob(it->first) ? knobs.erase(it) : ++it;
  return knobs;
}

}  // namespace autotune
}  // namespace agate
