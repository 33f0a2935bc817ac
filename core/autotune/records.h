// Tuning records: one JSON line per measured candidate, appended as the tuner goes.
//
// Why JSON lines: a tuning run may be killed at any moment (Ctrl-C, a crash, the machine going
// away) and must leave a file that every later run can read, resume from, and apply. Each
// record is written as one whole line with a single write() and fsync()ed (RecordWriter), so a
// killed run leaves at worst one truncated last line, which readers skip with a warning. Lines
// are independent, so files from several runs concatenate.
//
// A record names its task (ops::TaskKeyOf), the knob config, the median time or the error, the
// target string, the agate version and the knob-space version (ops::kKnobSpaceVersion). A file
// that holds a record for another target or another knob-space version is refused as a whole,
// naming the line: applying part of a file is never done silently.
//
// Example line:
//   {"task":"conv_8c1d...","knobs":{"conv_ow_block":7},"ms":0.412,"error":"","target":"llvm -mcpu=znver4 ...",
//    "agate":"0.1.0","knob_space":1,"time":1764000000,"threads":2}
// ("in_model":true, only when set: a time measured inside the whole model.)
#ifndef AGATE_CORE_AUTOTUNE_RECORDS_H_
#define AGATE_CORE_AUTOTUNE_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/ops/knob_space.h"

namespace agate {
namespace autotune {

struct TuningRecord {
  std::string task;             // ops::TaskKeyOf
  ops::KnobConfig knobs;        // the candidate (knobs left out keep their default)
  bool ok = false;              // measured; false: `error` says why not
  double ms = 0;                // median time when ok
  std::string error;
  std::string target;           // target::Target::ToString()
  std::string agate_version;    // AGATE_VERSION_STRING of the tuner
  int knob_space_version = 0;   // ops::kKnobSpaceVersion of the tuner
  int64_t time = 0;             // seconds since the epoch when measured
  int threads = 0;              // the runtime threads it was timed with (0: the runtime's default).
                                // A module's thread count is chosen when it runs, so compile applies
                                // the best record whatever its threads, but not the thread-split
                                // knobs of one timed on one thread (KnobsToApply); the tuner resumes
                                // only from records timed with its own thread count.
  bool in_model = false;        // timed inside the whole model (the tuner's last check: the task's
                                // kernels' share of whole runs), not alone; see BestPerTask.
};

// One line (no newline). Round-trips through RecordFromJson.
std::string RecordToJson(const TuningRecord& record);
// Parses one line; kInvalidArgument saying what is wrong (not JSON, a field missing or mistyped).
TuningRecord RecordFromJson(const std::string& line);

// Appends records to a file, one whole line per write, fsync'ed: a kill at any point leaves
// every earlier record intact and at most one truncated last line.
class RecordWriter {
 public:
  // Opens (creating) `path` for appending. kIo naming the path when it cannot.
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  void Append(const TuningRecord& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool needs_newline_ = false;  // the file ended in a truncated line: start ours on a fresh one
};

struct RecordFile {
  std::vector<TuningRecord> records;
  std::vector<std::string> warnings;  // "FILE line N: ...; skipped", one per skipped line
};

// Reads every record of `path`. A missing file is kNotFound; an unparsable line (a corrupt or
// truncated one) is skipped with a warning naming it. When `target` is not empty, a record for
// another target is kInvalidArgument naming the file, line and both targets; a record of another
// knob-space version is kInvalidArgument naming the line, whatever the target. Records of another
// agate version with the same knob space apply, with one warning naming the first such line.
RecordFile ReadRecords(const std::string& path, const std::string& target);

// Per task, the config with the lowest median time over its measured (ok) records; the
// returned record is that config's, with ms = the median. When some configs of a task were
// measured more than once (the tuner re-measures its finalists, TuneOptions::confirm_rounds),
// only those compete: the minimum of one noisy measurement per config favours the luckiest
// draw (inside ResNet-50 on this 2-core VM, "best of 48" kernel times summed to 1.30x the
// defaults, the module ran 1.04-1.14x faster), and a config timed once cannot have been
// re-checked. A task with records timed inside the whole model (in_model) is decided by those
// alone: kernels tuned one at a time can run slower in the model than their defaults (other
// kernels' data in the caches, another thread count's split), and the model is what runs.
std::map<std::string, TuningRecord> BestPerTask(const std::vector<TuningRecord>& records);

// The median of the ok records of `task` with exactly these knobs; 0 when there are none.
double MedianMs(const std::vector<TuningRecord>& records, const std::string& task, const ops::KnobConfig& knobs);

// The knobs of `record` that compile applies: all of them, except the thread-split knobs
// (ops::IsThreadSplitKnob) of a record timed on one thread, which that measurement could not tell
// apart (records made before the tuner stopped varying them there may hold either value); they
// keep their defaults.
ops::KnobConfig KnobsToApply(const TuningRecord& record);

}  // namespace autotune
}  // namespace agate

#endif  // AGATE_CORE_AUTOTUNE_RECORDS_H_
