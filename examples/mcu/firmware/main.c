/* The example firmware: three models compiled by agate into packages with different prefixes
 * (`agate compile --package kws`, `--package kws8`, `--package demo`), linked into one image with the
 * core runtime, run on a Cortex-M under QEMU: the keyword-spotting DS-CNN in float32 (kws) and in int8
 * (kws8, a QDQ model folded into integer kernels; it still takes and returns float32) and the demo CNN.
 *
 * For each model it reads the input from the host through semihosting (<prefix>.in: the raw
 * float32 input, what examples/mcu/run_example.py writes), runs the model with its generated
 * entry point agate_<prefix>_run and prints every output value as the hex of its float32 bits
 * (exact, no float formatting in the firmware):
 *   AGATE_OUTPUT <prefix> <index> <hex> <hex> ...
 * then what the runtime needs in RAM on this core (32-bit pointers), and it shows that a module
 * loaded with the other model's kernel table is refused:
 *   AGATE_RAM <prefix> module_state=<bytes> executor=<bytes> memory_macro=<bytes>
 *   AGATE_REFUSED <status>: <message>
 * Exit status 0 when everything ran. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agate_demo.h"
#include "agate_kws.h"
#include "agate_kws8.h"

#if AGATE_KWS_NUM_INPUTS != 1 || AGATE_KWS_NUM_OUTPUTS != 1 || AGATE_DEMO_NUM_INPUTS != 1 || \
    AGATE_DEMO_NUM_OUTPUTS != 1 || AGATE_KWS8_NUM_INPUTS != 1 || AGATE_KWS8_NUM_OUTPUTS != 1
#error "this example runs models of one input and one output"
#endif

static uint8_t kws_memory[AGATE_KWS_MEMORY_BYTES] __attribute__((aligned(64)));
static uint8_t kws8_memory[AGATE_KWS8_MEMORY_BYTES] __attribute__((aligned(64)));
static uint8_t demo_memory[AGATE_DEMO_MEMORY_BYTES] __attribute__((aligned(64)));
static float kws_input[AGATE_KWS_INPUT0_BYTES / sizeof(float)];
static float kws_output[AGATE_KWS_OUTPUT0_BYTES / sizeof(float)];
static float kws8_input[AGATE_KWS8_INPUT0_BYTES / sizeof(float)];
static float kws8_output[AGATE_KWS8_OUTPUT0_BYTES / sizeof(float)];
static float demo_input[AGATE_DEMO_INPUT0_BYTES / sizeof(float)];
static float demo_output[AGATE_DEMO_OUTPUT0_BYTES / sizeof(float)];

typedef agate_status_t (*run_fn)(const void* const* inputs, void* const* outputs, void* memory);

/* One packaged model and the firmware's buffers for it. */
typedef struct {
  const char* prefix;
  run_fn run;
  void* memory;
  size_t memory_bytes;
  float* input;
  size_t input_bytes;
  float* output;
  size_t output_bytes;
  const uint8_t* module;
  size_t module_size;
  const agate_kernel_table* table;
  uint64_t fingerprint;
} model_t;

/* open/read rather than fopen: no FILE buffer from the heap, whose place newlib's semihosting
 * start code takes from the emulator (not this firmware's linker script). */
static int read_input(const char* path, void* data, size_t bytes) {
  int fd = open(path, O_RDONLY);
  size_t done = 0;
  if (fd < 0) {
    printf("cannot open %s\n", path);
    return 1;
  }
  while (done < bytes) {
    int n = read(fd, (char*)data + done, bytes - done);
    if (n <= 0) break;
    done += (size_t)n;
  }
  close(fd);
  if (done != bytes) {
    printf("%s: %u bytes, expected %u\n", path, (unsigned)done, (unsigned)bytes);
    return 1;
  }
  return 0;
}

static int run_model(const model_t* m) {
  char path[32];
  const void* inputs[1];
  void* outputs[1];
  size_t i;
  agate_status_t status;
  snprintf(path, sizeof(path), "%s.in", m->prefix);
  if (read_input(path, m->input, m->input_bytes) != 0) return 1;
  inputs[0] = m->input;
  outputs[0] = m->output;
  status = m->run(inputs, outputs, m->memory);
  if (status != AGATE_OK) {
    printf("%s: %s: %s\n", m->prefix, agate_status_name(status), agate_last_error_message());
    return 1;
  }
  printf("AGATE_OUTPUT %s 0", m->prefix);
  for (i = 0; i < m->output_bytes / sizeof(float); ++i) {
    uint32_t bits;
    memcpy(&bits, &m->output[i], sizeof(bits));
    printf(" %08lx", (unsigned long)bits);
  }
  printf("\n");
  return 0;
}

/* The runtime's state for a module on this core, next to what the package's header reserves
 * (sized on the compiling host, with 64-bit pointers). */
static int report_ram(const model_t* m) {
  size_t module_state = 0, executor = 0;
  agate_module_t* module = NULL;
  agate_status_t status = agate_module_in_place_bytes(m->module, m->module_size, &module_state);
  if (status == AGATE_OK) {
    status = agate_module_load_in_place_fingerprinted(m->module, m->module_size, m->table, m->fingerprint, m->memory,
                                                      module_state, &module);
  }
  if (status == AGATE_OK) status = agate_executor_in_place_bytes(module, &executor);
  if (status != AGATE_OK) {
    printf("%s: %s: %s\n", m->prefix, agate_status_name(status), agate_last_error_message());
    return 1;
  }
  printf("AGATE_RAM %s module_state=%u executor=%u memory_macro=%u\n", m->prefix, (unsigned)module_state,
         (unsigned)executor, (unsigned)m->memory_bytes);
  agate_module_free(module);
  return 0;
}

#define MODEL(p)                                                                                          \
  {#p, agate_##p##_run, p##_memory, sizeof(p##_memory), p##_input, sizeof(p##_input), p##_output,         \
   sizeof(p##_output), agate_##p##_module, 0, &agate_##p##_kernel_table, 0}

int main(void) {
  model_t models[] = {MODEL(kws), MODEL(kws8), MODEL(demo)};
  int failures = 0;
  size_t i;
  agate_module_t* module = NULL;
  agate_status_t status;
  /* (sizes and fingerprints are link-time constants, not C constant expressions) */
  models[0].module_size = agate_kws_module_size;
  models[0].fingerprint = agate_kws_kernel_fingerprint;
  models[1].module_size = agate_kws8_module_size;
  models[1].fingerprint = agate_kws8_kernel_fingerprint;
  models[2].module_size = agate_demo_module_size;
  models[2].fingerprint = agate_demo_kernel_fingerprint;
  for (i = 0; i < sizeof(models) / sizeof(models[0]); ++i) failures += run_model(&models[i]);
  for (i = 0; i < sizeof(models) / sizeof(models[0]); ++i) failures += report_ram(&models[i]);
  /* The keyword-spotting module with the demo's kernels: refused, never run. */
  status = agate_module_load_in_place_fingerprinted(agate_kws_module, agate_kws_module_size, &agate_demo_kernel_table,
                                                    agate_demo_kernel_fingerprint, kws_memory, sizeof(kws_memory),
                                                    &module);
  printf("AGATE_REFUSED %s: %s\n", agate_status_name(status), agate_last_error_message());
  if (status == AGATE_OK) failures += 1;
  printf("AGATE_DONE failures=%d\n", failures);
  return failures == 0 ? 0 : 1;
}
