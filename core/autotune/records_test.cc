#include "core/autotune/records.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/support/error.h"
#include "core/support/version.h"

namespace agate {
namespace autotune {
namespace {

const char* kTarget = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512";

TuningRecord Record(const std::string& task, int64_t block, double ms) {
  TuningRecord r;
  r.task = task;
  r.knobs = {{"conv_ow_block", block}, {"parallel", 1}};
  r.ok = ms > 0;
  r.ms = ms > 0 ? ms : 0;
  r.error = ms > 0 ? "" : "run failed: killed by signal 11 (Segmentation fault)";
  r.target = kTarget;
  r.agate_version = AGATE_VERSION_STRING;
  r.knob_space_version = ops::kKnobSpaceVersion;
  r.time = 1764000000;
  r.threads = 2;
  return r;
}

std::string TempPath(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".jsonl";
  std::remove(path.c_str());
  return path;
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(RecordsTest, JsonRoundTrip) {
  for (const TuningRecord& r : {Record("conv_0123456789abcdef", 7, 0.25), Record("dense_1", 4, 0)}) {
    std::string line = RecordToJson(r);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    TuningRecord back = RecordFromJson(line);
    EXPECT_EQ(back.task, r.task);
    EXPECT_EQ(back.knobs, r.knobs);
    EXPECT_EQ(back.ok, r.ok);
    EXPECT_DOUBLE_EQ(back.ms, r.ms);
    EXPECT_EQ(back.error, r.error);
    EXPECT_EQ(back.target, r.target);
    EXPECT_EQ(back.agate_version, r.agate_version);
    EXPECT_EQ(back.knob_space_version, r.knob_space_version);
    EXPECT_EQ(back.time, r.time);
    EXPECT_EQ(back.threads, r.threads);
  }
}

TEST(RecordsTest, MalformedLinesSayWhatIsWrong) {
  EXPECT_THROW(RecordFromJson("{not json"), Error);
  EXPECT_THROW(RecordFromJson("[1,2]"), Error);
  std::string line = RecordToJson(Record("t", 4, 1.0));
  std::string no_task = line;
  no_task.replace(no_task.find("\"task\""), 6, "\"tusk\"");
  try {
    RecordFromJson(no_task);
    FAIL() << "accepted a record without a task";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("\"task\""), std::string::npos) << e.message();
  }
}

TEST(RecordsTest, WriterAppendsAndReaderReadsBack) {
  std::string path = TempPath("append");
  {
    RecordWriter w(path);
    w.Append(Record("a", 4, 2.0));
    w.Append(Record("a", 7, 1.0));
  }
  {
    RecordWriter w(path);  // a second run appends
    w.Append(Record("b", 2, 3.0));
    w.Append(Record("b", 4, 0));
  }
  RecordFile f = ReadRecords(path, kTarget);
  EXPECT_TRUE(f.warnings.empty());
  ASSERT_EQ(f.records.size(), 4u);
  auto best = BestPerTask(f.records);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best["a"].knobs.at("conv_ow_block"), 7);
  EXPECT_DOUBLE_EQ(best["b"].ms, 3.0);  // the failed record never wins
}

TEST(RecordsTest, TheBestIsTheLowestMedianOfTheConfigsMeasuredAgain) {
  // Config 7 had one lucky time (1.0) and two ordinary ones; config 4 is steadily faster;
  // config 2, timed once at 1.2, was never re-checked and does not compete.
  std::vector<TuningRecord> r = {Record("a", 7, 1.0), Record("a", 4, 1.5), Record("a", 2, 1.2),
                                 Record("a", 7, 2.0), Record("a", 4, 1.6), Record("a", 7, 2.1),
                                 Record("a", 4, 1.4), Record("a", 4, 0)};  // a failed run does not count
  auto best = BestPerTask(r);
  EXPECT_EQ(best["a"].knobs.at("conv_ow_block"), 4);
  EXPECT_DOUBLE_EQ(best["a"].ms, 1.5);
  EXPECT_DOUBLE_EQ(MedianMs(r, "a", {{"conv_ow_block", 7}, {"parallel", 1}}), 2.0);
  EXPECT_DOUBLE_EQ(MedianMs(r, "a", {{"conv_ow_block", 4}, {"parallel", 1}}), 1.5);
  EXPECT_DOUBLE_EQ(MedianMs(r, "b", {{"conv_ow_block", 4}, {"parallel", 1}}), 0.0);
  // With one time per config (no re-measurement), the fastest time wins.
  auto single = BestPerTask({Record("a", 7, 1.0), Record("a", 4, 1.5)});
  EXPECT_EQ(single["a"].knobs.at("conv_ow_block"), 7);
}

TEST(RecordsTest, ThreadSplitKnobsOfOneThreadRecordsAreNotApplied) {
  TuningRecord one = Record("a", 7, 1.0);
  one.knobs["parallel"] = 0;
  one.threads = 1;  // on one thread parallel=0 and =1 time the same: the noise chose 0
  EXPECT_EQ(KnobsToApply(one), (ops::KnobConfig{{"conv_ow_block", 7}}));
  TuningRecord two = one;
  two.threads = 2;
  EXPECT_EQ(KnobsToApply(two), (ops::KnobConfig{{"conv_ow_block", 7}, {"parallel", 0}}));
}

TEST(RecordsTest, CorruptAndTruncatedLinesAreSkippedWithAWarning) {
  std::string path = TempPath("corrupt");
  std::string good = RecordToJson(Record("a", 4, 2.0));
  WriteText(path, good + "\n{\"task\": garbage\n" + good + "\n" + good.substr(0, good.size() / 2));
  RecordFile f = ReadRecords(path, kTarget);
  EXPECT_EQ(f.records.size(), 2u);
  ASSERT_EQ(f.warnings.size(), 2u);
  EXPECT_NE(f.warnings[0].find("line 2"), std::string::npos) << f.warnings[0];
  EXPECT_NE(f.warnings[1].find("line 4"), std::string::npos) << f.warnings[1];
  EXPECT_NE(f.warnings[1].find("truncated"), std::string::npos) << f.warnings[1];
  // A writer resuming after the truncated line starts on a fresh line: nothing of it is lost.
  {
    RecordWriter w(path);
    w.Append(Record("c", 4, 1.0));
  }
  f = ReadRecords(path, kTarget);
  EXPECT_EQ(f.records.size(), 3u);
  EXPECT_EQ(f.records.back().task, "c");
}

TEST(RecordsTest, AnotherTargetIsRefusedNamingTheLine) {
  std::string path = TempPath("target");
  TuningRecord other = Record("a", 4, 1.0);
  other.target = "llvm -mtriple=aarch64-linux-gnu";
  WriteText(path, RecordToJson(Record("a", 4, 2.0)) + "\n" + RecordToJson(other) + "\n");
  try {
    ReadRecords(path, kTarget);
    FAIL() << "applied records of another target";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("line 2"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("aarch64"), std::string::npos) << e.message();
  }
  EXPECT_EQ(ReadRecords(path, "").records.size(), 2u);  // no target given: every record read
}

TEST(RecordsTest, AnotherKnobSpaceVersionIsRefused) {
  std::string path = TempPath("version");
  TuningRecord old = Record("a", 4, 1.0);
  old.knob_space_version = ops::kKnobSpaceVersion + 1;
  WriteText(path, RecordToJson(old) + "\n");
  try {
    ReadRecords(path, kTarget);
    FAIL() << "applied records of another knob space";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("line 1"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("knob-space version"), std::string::npos) << e.message();
  }
}

TEST(RecordsTest, AnotherAgateVersionWithTheSameKnobSpaceAppliesWithAWarning) {
  std::string path = TempPath("agate_version");
  TuningRecord other = Record("a", 4, 1.0);
  other.agate_version = "0.0.9";
  WriteText(path, RecordToJson(other) + "\n" + RecordToJson(other) + "\n");
  RecordFile f = ReadRecords(path, kTarget);
  EXPECT_EQ(f.records.size(), 2u);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("0.0.9"), std::string::npos) << f.warnings[0];
}

TEST(RecordsTest, AMissingFileIsNotFound) {
  try {
    ReadRecords(TempPath("missing"), kTarget);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
  }
}

}  // namespace
}  // namespace autotune
}  // namespace agate
