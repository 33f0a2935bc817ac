// agate tune MODEL.onnx --records FILE [--target T] [--trials N | --time-budget 30m] [--threads T]
//                       [--tuner xgb|random|grid] [--batch N] [--repeats N] [--timeout S]
//                       [--cache network|warm|cold] [--fusion rule|none|all] [--input-shape ...]
//
// Tunes every distinct kernel workload of the model (core/autotune) and appends one JSON line
// per measured candidate to the records file, which `agate compile --tuning-records FILE`
// applies. A file that exists already is resumed: its candidates are not measured again.
// Ctrl-C stops between batches and keeps every record written so far.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "agate/runtime.h"
#include "core/autotune/measure.h"
#include "core/autotune/records.h"
#include "core/autotune/tuner.h"
#include "core/compiler/compiler.h"
#include "core/support/error.h"
#include "frontends/onnx/importer.h"
#include "tools/cli/command.h"

namespace agate {
namespace cli {
namespace {

// The thread count `agate run` would use (AGATE_NUM_THREADS or the physical cores).
int RuntimeDefaultThreads() {
  int32_t n = 0;
  if (agate_runtime_num_threads(&n) != AGATE_OK || n < 1) return 1;
  return n;
}

struct TuneFlags {
  std::string model;
  std::string records;
  std::string target = "llvm -mcpu=native";
  std::string fusion = "rule";
  std::string input_shape;
  std::string tuner = "xgb";
  std::string time_budget;
  std::string cache = "network";
  int trials = 32;
  bool trials_given = false;  // --trials on the command line (else a --time-budget alone bounds the run)
  int threads = 0;
  int batch = 8;
  int repeats = 5;
  int confirm_rounds = 2;
  int confirm_top = 3;
  int model_check_rounds = 3;
  double timeout_s = 10;
  uint64_t seed = 1;
};

// The tuning run's last step: the model compiled without and with the tuned knobs, timed
// alternately as `agate run` times it (warm caches, back to back), each kernel's time in the runs
// too. The kernels were tuned one at a time with the caches flushed around them, so the sum of
// their gains can promise more than the model delivers (Inception-v3 on a 2-core Zen 3: 1.15x
// estimated, 0.99-1.06x measured), and a single kernel can lose in the model what it won alone.
// Per task, the kernels' times in the model become in-model records (autotune::InModelRecords):
// a task whose tuned kernels ran slower there falls back to its defaults in every later compile.
void CheckWholeModel(const graph::Graph& imported, const compiler::CompileOptions& untuned,
                     const std::vector<autotune::Task>& tasks, const std::vector<autotune::TaskReport>& reports,
                     autotune::MeasureOptions measure, const TuneFlags& flags, const std::string& target_text,
                     autotune::RecordWriter* writer) {
  compiler::CompileOptions tuned = untuned;
  for (size_t i = 0; i < reports.size() && i < tasks.size(); ++i)
    if (reports[i].best_ms > 0) tuned.task_knobs[tasks[i].key] = reports[i].best;
  if (tuned.task_knobs.empty()) return;
  measure.cache = autotune::CacheState::kWarm;
  measure.repeats = std::max(measure.repeats, 10);
  measure.timeout_s = std::max(measure.timeout_s, 120.0);
  measure.kernel_times = true;
  std::cout << "whole model: timing it untuned and tuned, " << flags.model_check_rounds << " rounds alternately ("
            << measure.threads << " threads, warm caches; --model-check-rounds 0 skips this)\n"
            << std::flush;
  std::vector<autotune::MeasureResult> r =
      autotune::MeasureModelVariants(imported, {untuned, tuned}, measure, flags.model_check_rounds);
  if (!r[0].ok || !r[1].ok) {
    std::cout << "whole model: not measured: " << (r[0].ok ? r[1].error : r[0].error) << "\n";
    return;
  }
  std::printf("whole model: untuned %.3f ms (runs %.3f-%.3f), tuned %.3f ms (runs %.3f-%.3f): %.2fx\n", r[0].ms,
              r[0].min_ms, r[0].max_ms, r[1].ms, r[1].min_ms, r[1].max_ms, r[0].ms / r[1].ms);

  // Per task: its kernels' share of the runs, recorded; the tasks that lost fall back.
  std::vector<autotune::TuningRecord> in_model =
      autotune::InModelRecords(tasks, reports, r[0], r[1], target_text, measure.threads);
  compiler::CompileOptions kept = tuned;
  std::vector<std::string> fallen;
  for (size_t i = 0; i + 1 < in_model.size(); i += 2) {  // pairs: the default's, then the tuned config's
    writer->Append(in_model[i]);
    writer->Append(in_model[i + 1]);
    if (in_model[i + 1].ms < in_model[i].ms) continue;
    kept.task_knobs.erase(in_model[i].task);
    char line[256];
    std::snprintf(line, sizeof(line), "  %s: %.4f ms per call in the model tuned, %.4f with its defaults\n",
                  in_model[i].task.c_str(), in_model[i + 1].ms, in_model[i].ms);
    fallen.push_back(line);
  }
  if (!fallen.empty()) {
    std::cout << "tasks whose tuned kernels ran slower in the model than their defaults (they fall back to the "
                 "defaults; in-model records written):\n";
    for (const std::string& line : fallen) std::cout << line;
    std::cout << "whole model: timing it untuned and with the fallbacks, " << flags.model_check_rounds
              << " rounds alternately\n" << std::flush;
    measure.kernel_times = false;
    r = autotune::MeasureModelVariants(imported, {untuned, kept}, measure, flags.model_check_rounds);
    if (!r[0].ok || !r[1].ok) {
      std::cout << "whole model: not measured: " << (r[0].ok ? r[1].error : r[0].error) << "\n";
      return;
    }
    std::printf("whole model: untuned %.3f ms (runs %.3f-%.3f), tuned with fallbacks %.3f ms (runs %.3f-%.3f): "
                "%.2fx\n", r[0].ms, r[0].min_ms, r[0].max_ms, r[1].ms, r[1].min_ms, r[1].max_ms, r[0].ms / r[1].ms);
  }
  // Only beyond the noise: even the tuned module's fastest run was slower than the untuned median.
  if (r[1].min_ms > r[0].ms) {
    std::cout << "agate: warning: with the tuned kernels this model ran slower here than with the defaults (gains "
                 "measured one kernel at a time need not add up in the model): compiling it without "
                 "--tuning-records is faster on this machine\n";
  }
}

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

// "30m", "90s", "1h", "1.5h", "45" (seconds).
double ParseDuration(const std::string& text) {
  if (text.empty()) return 0;
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  AGATE_REQUIRE(used > 0 && scale > 0 && value > 0, kInvalidArgument)
      << "--time-budget '" << text << "': expected a duration such as 90s, 30m or 1h";
  return value * scale;
}

autotune::CacheState ParseCache(const std::string& text) {
  if (text == "network") return autotune::CacheState::kNetwork;
  if (text == "warm") return autotune::CacheState::kWarm;
  return autotune::CacheState::kCold;
}

std::string Duration(double s) {
  if (s < 0) return "?";
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof(text), "%.0fs", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof(text), "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(text, sizeof(text), "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
  }
  return text;
}

std::string Bar(int done, int total, int width = 20) {
  int filled = total > 0 ? std::min(width, done * width / total) : 0;
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

std::string KernelList(const autotune::Task& task) {
  std::string text;
  for (size_t i = 0; i < task.kernels.size() && i < 3; ++i) text += (i ? "," : "") + task.kernels[i];
  if (task.kernels.size() > 3) text += ",+" + std::to_string(task.kernels.size() - 3);
  return text;
}

void PrintProgress(const autotune::Progress& p, bool tty) {
  std::ostringstream os;
  char best[96] = "";
  if (p.best_ms > 0 && p.default_ms > 0) {
    std::snprintf(best, sizeof(best), "best %.4g ms (%.2fx default)", p.best_ms, p.default_ms / p.best_ms);
  } else if (p.best_ms > 0) {
    std::snprintf(best, sizeof(best), "best %.4g ms", p.best_ms);
  } else {
    std::snprintf(best, sizeof(best), "no candidate ran yet");
  }
  os << "task " << p.task_index + 1 << "/" << p.num_tasks << " " << p.task->op << " " << KernelList(*p.task) << " "
     << Bar(p.trials, p.planned_trials) << " " << p.trials << "/" << p.planned_trials << "  " << best << "  ETA task "
     << Duration(p.task_eta_s) << ", all " << Duration(p.total_eta_s) << " (" << Duration(p.total_elapsed_s)
     << " elapsed)";
  if (tty) {
    std::cout << "\r" << os.str() << "\033[K" << std::flush;
  } else {
    std::cout << os.str() << "\n" << std::flush;
  }
}

int RunTune(const TuneFlags& flags) {
  onnx_frontend::ImportOptions import;
  if (!flags.input_shape.empty()) import.input_shapes = onnx_frontend::ParseInputShapes(flags.input_shape);
  compiler::CompileOptions compile;
  compile.target = flags.target;
  compile.fusion = fusion::ParseFusionPolicy(flags.fusion, flags.target);
  target::Target target = target::Target::Parse(flags.target);
  autotune::RequireMeasurableTarget(target);  // before the records file is read or created
  std::string target_text = target.ToString();

  autotune::TuneOptions options;
  options.tuner = autotune::ParseTunerKind(flags.tuner);
  options.time_budget_s = ParseDuration(flags.time_budget);
  options.trials = options.time_budget_s > 0 && !flags.trials_given ? 0 : flags.trials;
  options.batch = flags.batch;
  options.seed = flags.seed;
  // Recorded with each candidate (records.h): the count the runtime will use, not 0 for "default".
  options.measure.threads = flags.threads > 0 ? flags.threads : RuntimeDefaultThreads();
  options.measure.repeats = flags.repeats;
  options.confirm_rounds = flags.confirm_rounds;
  options.confirm_top = flags.confirm_top;
  options.measure.timeout_s = flags.timeout_s;
  options.measure.cache = ParseCache(flags.cache);

  // Resume: the file's records for this target (another target's file is refused).
  std::vector<autotune::TuningRecord> prior;
  struct stat st;
  if (::stat(flags.records.c_str(), &st) == 0) {
    autotune::RecordFile file = autotune::ReadRecords(flags.records, target_text);
    for (const std::string& w : file.warnings) std::cerr << "agate: warning: " << w << "\n";
    prior = std::move(file.records);
  }

  graph::Graph imported = onnx_frontend::ImportOnnxFile(flags.model, import);
  graph::Graph planned = compiler::PlanGraph(imported, compile);
  std::vector<autotune::Task> tasks = autotune::ExtractTasks(planned, target, options.measure.threads);
  size_t kernels = 0;
  for (const auto& t : tasks) kernels += t.kernels.size();
  std::cout << "tuning " << flags.model << " for " << target_text << ": " << tasks.size() << " tasks (" << kernels
            << " of " << planned.groups.size() << " kernels have knobs), tuner " << flags.tuner << ", "
            << (options.trials > 0 ? std::to_string(options.trials) + " trials per task" : std::string("no trial limit"))
            << (options.time_budget_s > 0 ? ", time budget " + Duration(options.time_budget_s) : std::string())
            << ", threads " << options.measure.threads << (flags.threads > 0 ? "" : " (the runtime's default)")
            << ", caches " << autotune::CacheStateName(options.measure.cache) << "\n";
  if (!prior.empty()) std::cout << "resuming: " << prior.size() << " records in " << flags.records << "\n";

  autotune::RecordWriter writer(flags.records);
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  ::sigaction(SIGINT, &action, &previous);
  bool tty = ::isatty(STDOUT_FILENO);
  int last_task = -1;
  auto progress = [&](const autotune::Progress& p) {
    if (tty && last_task >= 0 && p.task_index != last_task) std::cout << "\n";
    last_task = p.task_index;
    PrintProgress(p, tty);
  };
  std::vector<autotune::TaskReport> reports = autotune::TuneModel(planned, target, tasks, options, &writer, prior,
                                                                  progress, [] { return g_interrupted != 0; });
  ::sigaction(SIGINT, &previous, nullptr);
  if (tty && last_task >= 0) std::cout << "\n";

  // Per-task summary, and the tuned kernels' total against their defaults.
  double total_default = 0, total_best = 0;
  std::cout << "task results (ms per call; kernels sharing a workload share its result):\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    const autotune::TaskReport& r = reports[i];
    const autotune::Task& t = tasks[i];
    char line[256];
    std::snprintf(line, sizeof(line), "  %-24s %-28s default %8.4f  best %8.4f  %5.2fx  %3d trials (%d failed)  %s\n",
                  t.key.c_str(), KernelList(t).c_str(), r.default_ms, r.best_ms,
                  r.default_ms > 0 && r.best_ms > 0 ? r.default_ms / r.best_ms : 0.0, r.trials, r.failed,
                  ops::KnobConfigToString(r.best).c_str());
    std::cout << line;
    if (r.default_ms > 0 && r.best_ms > 0) {
      total_default += r.default_ms * static_cast<double>(t.kernels.size());
      total_best += r.best_ms * static_cast<double>(t.kernels.size());
    }
  }
  if (total_best > 0) {
    std::printf("tuned kernels: %.3f ms -> %.3f ms per run (%.2fx)\n", total_default, total_best,
                total_default / total_best);
  }
  if (!g_interrupted && reports.size() < tasks.size()) {
    std::cout << "time budget spent: " << reports.size() << " of " << tasks.size()
              << " tasks tuned (run again with the same records to go on)\n";
  }
  if (g_interrupted) {
    std::cout << "interrupted: every measured candidate is kept in " << flags.records
              << "; run the same command again to resume\n";
    return 130;
  }
  if (flags.model_check_rounds > 0)
    CheckWholeModel(imported, compile, tasks, reports, options.measure, flags, target_text, &writer);
  std::cout << "records: " << flags.records << " (apply with: agate compile " << flags.model
            << " --tuning-records " << flags.records << ")\n";
  return 0;
}

}  // namespace

CommandRunner RegisterTuneCommand(CLI::App& app) {
  auto flags = std::make_shared<TuneFlags>();
  CLI::App* cmd = app.add_subcommand("tune", "auto-tune a model's kernels and record the measurements");
  cmd->add_option("model", flags->model, "the ONNX model")->required()->check(CLI::ExistingFile);
  cmd->add_option("--records", flags->records, "the JSON-lines records file (appended; an existing one is resumed)")
      ->required();
  cmd->add_option("--target", flags->target, "target, e.g. \"llvm -mcpu=native\"")->capture_default_str();
  cmd->add_option("--trials", flags->trials,
                  "measured candidates per task (0: no limit; with --time-budget alone: no limit either)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--time-budget", flags->time_budget, "wall-clock budget for the whole run, e.g. 30m, 1h, 90s");
  cmd->add_option("--threads", flags->threads, "the runtime's threads while measuring (0: its default)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cmd->add_option("--tuner", flags->tuner, "search: xgb (cost model), random or grid")
      ->check(CLI::IsMember({"xgb", "random", "grid"}))
      ->capture_default_str();
  cmd->add_option("--batch", flags->batch, "candidates built in parallel per step")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--repeats", flags->repeats, "timed runs per candidate (the median counts)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--confirm-rounds", flags->confirm_rounds,
                  "after each task's search, its --confirm-top fastest candidates and the default are timed again "
                  "this many times, interleaved, and the lowest median wins (0: the fastest single time wins)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--confirm-top", flags->confirm_top, "how many of each task's fastest candidates --confirm-rounds re-times")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--model-check-rounds", flags->model_check_rounds,
                  "at the end, time the whole model untuned and tuned alternately this many rounds and print both; "
                  "each kernel's time in those runs is recorded, and a kernel whose tuned config ran slower there "
                  "falls back to its defaults (0: skip)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--timeout", flags->timeout_s, "seconds before a candidate's run is killed and recorded as failed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cache", flags->cache,
                  "cache state of each timed run: network (LLC flushed, inputs re-read: as inside the model), warm, cold")
      ->check(CLI::IsMember({"network", "warm", "cold"}))
      ->capture_default_str();
  cmd->add_option("--fusion", flags->fusion,
                  "operator fusion policy (as for compile): rule, none, all, adaptive[,policy=FILE][,fallback=rule] or random,seed=N")
      ->check(CLI::Validator(fusion::FusionPolicySyntaxError, "POLICY"))
      ->capture_default_str();
  cmd->add_option("--input-shape", flags->input_shape, "override input shapes: name:1x3x224x224[,name2:...]");
  cmd->add_option("--seed", flags->seed, "seed of the random choices")->capture_default_str();
  return [flags, cmd] {
    flags->trials_given = cmd->count("--trials") > 0;
    return RunTune(*flags);
  };
}

}  // namespace cli
}  // namespace agate
