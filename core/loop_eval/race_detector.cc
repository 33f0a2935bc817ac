#include "core/loop_eval/race_detector.h"

#include "core/support/error.h"

namespace agate {
namespace loop_eval {

void RaceDetector::BeginLaunch(const std::string& kernel, Describe describe) {
  kernel_ = kernel;
  describe_ = std::move(describe);
  block_ = -1;
  shared_.clear();
  global_.clear();
}

void RaceDetector::BeginBlock(int64_t block) {
  block_ = block;
  phase_ = 0;
  shared_.clear();
}

void RaceDetector::Barrier() {
  ++phase_;
  shared_.clear();
}

bool RaceDetector::Unordered(const Stamp& a, int64_t thread) const {
  if (!a.valid()) return false;
  if (a.block != block_) return true;
  return a.thread != thread && a.phase == phase_;
}

void RaceDetector::Report(const std::string& what, const std::string& buffer, int64_t index, int64_t other_block,
                          int64_t other_thread, int64_t thread) const {
  AGATE_THROW(kInternal) << "race in GPU kernel " << kernel_ << ": " << describe_(block_, thread) << " " << what << " "
                         << buffer << "[" << index << "], which " << describe_(other_block, other_thread)
                         << " also accesses with no __syncthreads between them";
}

void RaceDetector::Access(const void* element, bool shared, bool write, int64_t thread, const std::string& buffer,
                          int64_t index) {
  if (shared) {
    SharedRecord& r = shared_[element];
    if (r.writer >= 0 && r.writer != thread) {
      Report(write ? "writes" : "reads", buffer, index, block_, r.writer, thread);
    }
    if (write) {
      if (r.many_readers || (r.reader >= 0 && r.reader != thread)) {
        Report("writes", buffer, index, block_, r.many_readers && r.reader == thread ? -1 : r.reader, thread);
      }
      r.writer = thread;
    } else if (r.reader < 0) {
      r.reader = thread;
    } else if (r.reader != thread) {
      r.many_readers = true;
    }
    return;
  }
  GlobalRecord& r = global_[element];
  if (Unordered(r.writer, thread)) {
    Report(write ? "writes" : "reads", buffer, index, r.writer.block, r.writer.thread, thread);
  }
  if (write) {
    bool other_block = r.readers_block == -2 || (r.readers_block >= 0 && r.readers_block != block_);
    bool same_phase = r.readers_block == block_ && r.last_phase == phase_ && (r.last_many || r.last_reader != thread);
    if (other_block || same_phase) {
      bool known = r.reader_block >= 0 && !(r.reader_block == block_ && r.reader_thread == thread);
      Report("writes", buffer, index, known ? r.reader_block : block_, known ? r.reader_thread : -1, thread);
    }
    r.writer = Stamp{block_, thread, phase_};
    return;
  }
  if (r.readers_block == -1) {
    r.readers_block = block_;
  } else if (r.readers_block != block_) {
    r.readers_block = -2;
  }
  if (r.reader_block < 0 || r.reader_thread == thread) {
    r.reader_block = block_;
    r.reader_thread = thread;
  }
  if (phase_ > r.last_phase || block_ != r.reader_block) {
    r.last_phase = phase_;
    r.last_reader = thread;
    r.last_many = false;
  } else if (phase_ == r.last_phase && r.last_reader != thread) {
    r.last_many = true;
  }
}

}  // namespace loop_eval
}  // namespace agate
