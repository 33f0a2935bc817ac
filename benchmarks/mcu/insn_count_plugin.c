/* A QEMU TCG plugin that counts the guest instructions executed inside given address ranges:
 * how many instructions a model's kernels take per inference on an emulated Cortex-M, where
 * QEMU has no cycle model (the DWT cycle counter reads 0) and Debian ships no plugins.
 *
 *   qemu-system-arm ... -plugin ./insn_count_plugin.so,range=0x1000-0x1400,range=... -d plugin
 *
 * Every `range=LO-HI` (hex, HI exclusive; a function, say) is counted on its own; at exit the
 * plugin prints, through qemu_plugin_outs (shown with `-d plugin`),
 *   AGATE_INSNS_RANGE <lo>-<hi> <n>     (one line per range, in the order given)
 *   AGATE_INSNS in_ranges=<n> total=<n> A translation block's instructions in the
 * ranges are added when the block runs (an exception in the middle of a block over-counts that
 * block; kernels take none).
 *
 * The plugin API's declarations are written out below (QEMU 7.2, plugin API version 1): Debian's
 * QEMU exports the functions but ships no qemu-plugin.h. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb* tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn* insn);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);
void qemu_plugin_outs(const char* string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

enum { kMaxRanges = 256 };
static uint64_t range_lo[kMaxRanges], range_hi[kMaxRanges];
static int num_ranges;
/* One emulated core (the Cortex-M boards), so plain counters. */
static uint64_t range_count[kMaxRanges], total;

static int RangeOf(uint64_t address) {
  for (int i = 0; i < num_ranges; ++i) {
    if (address >= range_lo[i] && address < range_hi[i]) return i;
  }
  return -1;
}

static void OnTranslate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total, n);
  /* A block lies in one function but may cross into the next: one add per range it touches. */
  int range = -2;
  uint64_t run = 0;
  for (size_t i = 0; i <= n; ++i) {
    int r = i < n ? RangeOf(qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i))) : -2;
    if (r != range && run > 0 && range >= 0) {
      qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &range_count[range], run);
    }
    if (r != range) run = 0;
    range = r;
    ++run;
  }
}

static void OnExit(qemu_plugin_id_t id, void* userdata) {
  (void)id;
  (void)userdata;
  char line[128];
  uint64_t in_ranges = 0;
  for (int i = 0; i < num_ranges; ++i) {
    snprintf(line, sizeof(line), "AGATE_INSNS_RANGE %" PRIx64 "-%" PRIx64 " %" PRIu64 "\n", range_lo[i], range_hi[i],
             range_count[i]);
    qemu_plugin_outs(line);
    in_ranges += range_count[i];
  }
  snprintf(line, sizeof(line), "AGATE_INSNS in_ranges=%" PRIu64 " total=%" PRIu64 "\n", in_ranges, total);
  qemu_plugin_outs(line);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info,
                                                               int argc, char** argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    unsigned long long lo, hi;
    if (strncmp(argv[i], "range=", 6) != 0 || sscanf(argv[i] + 6, "%llx-%llx", &lo, &hi) != 2 || hi <= lo ||
        num_ranges == kMaxRanges) {
      fprintf(stderr, "insn_count_plugin: expected range=LO-HI (hex, at most %d), got '%s'\n", kMaxRanges, argv[i]);
      return -1;
    }
    range_lo[num_ranges] = lo;
    range_hi[num_ranges++] = hi;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, OnTranslate);
  qemu_plugin_register_atexit_cb(id, OnExit, NULL);
  return 0;
}
