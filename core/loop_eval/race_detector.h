// RaceDetector: the evaluator's racecheck for GPU launches.
//
// Why: a missing __syncthreads or two threads writing one element gives wrong
// numbers only sometimes on a GPU (it depends on warp scheduling), and there is
// no GPU in most of our CI. The evaluator runs every thread of a block in
// lockstep phases (core/loop_eval/evaluator.h), and this detector sees every load and
// store, so it can prove the absence of the hazards compute-sanitizer's
// racecheck looks for, deterministically:
//  * shared memory, per block and per phase (the code between two barriers):
//    two threads writing one element, or one thread writing an element another
//    thread reads;
//  * global memory written by the launch: the same, where accesses of
//    different blocks always conflict (no barrier orders blocks) and accesses of
//    one block conflict within a phase.
// A hazard throws agate::Error(kInternal) naming the kernel, the buffer and
// element, and both threads: it is a bug in a schedule or a lowering pass.
#ifndef AGATE_CORE_LOOP_EVAL_RACE_DETECTOR_H_
#define AGATE_CORE_LOOP_EVAL_RACE_DETECTOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

namespace agate {
namespace loop_eval {

class RaceDetector {
 public:
  // `describe(block, thread)` names a thread for messages, e.g. "block (1,0,0) thread (5,0,0)".
  using Describe = std::function<std::string(int64_t block, int64_t thread)>;

  void BeginLaunch(const std::string& kernel, Describe describe);
  void BeginBlock(int64_t block);
  // __syncthreads in the current block: a new phase; shared accesses before it never race with later ones.
  void Barrier();
  // One element of `buffer` at `element` (its address), accessed by `thread` of the current block.
  void Access(const void* element, bool shared, bool write, int64_t thread, const std::string& buffer,
              int64_t index);

 private:
  struct SharedRecord {
    int64_t writer = -1;
    int64_t reader = -1;
    bool many_readers = false;
  };
  struct Stamp {
    int64_t block = -1;
    int64_t thread = -1;
    int64_t phase = -1;
    bool valid() const { return block >= 0; }
  };
  struct GlobalRecord {
    Stamp writer;
    int64_t readers_block = -1;  // the one block whose threads read it, -2 for several, -1 for none
    int64_t reader_block = -1;   // some reader, for messages
    int64_t reader_thread = -1;
    int64_t last_phase = -1;     // the latest phase of readers_block that read it
    int64_t last_reader = -1;    // a thread that read it in last_phase
    bool last_many = false;      // several threads read it in last_phase
  };

  // True when `a` (earlier) and the current access by `thread` in this block and phase may run unordered.
  bool Unordered(const Stamp& a, int64_t thread) const;
  [[noreturn]] void Report(const std::string& what, const std::string& buffer, int64_t index, int64_t other_block,
                           int64_t other_thread, int64_t thread) const;

  std::string kernel_;
  Describe describe_;
  int64_t block_ = -1;
  int64_t phase_ = 0;
  std::unordered_map<const void*, SharedRecord> shared_;
  std::unordered_map<const void*, GlobalRecord> global_;
};

}  // namespace loop_eval
}  // namespace agate

#endif  // AGATE_CORE_LOOP_EVAL_RACE_DETECTOR_H_
