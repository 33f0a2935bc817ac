/* The example firmware: two models compiled by agate into packages with different prefixes
 * (`agate compile --package kws`, `--package demo`), linked into one image with the core runtime,
 * run on a Cortex-M under QEMU.
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

#if AGATE_KWS_NUM_INPUTS != 1 || AGATE_KWS_NUM_OUTPUTS != 1 || AGATE_DEMO_NUM_INPUTS != 1 || \
    AGATE_DEMO_NUM_OUTPUTS != 1
#error "this example runs models of one input and one output"
#endif

static uint8_t kws_memory[AGATE_KWS_MEMORY_BYTES] __attribute__((aligned(64)));
static uint8_t demo_memory[AGATE_DEMO_MEMORY_BYTES] __attribute__((aligned(64)));
static float kws_input[AGATE_KWS_INPUT0_BYTES / sizeof(float)];
static float kws_output[AGATE_KWS_OUTPUT0_BYTES / sizeof(float)];
static float demo_input[AGATE_DEMO_INPUT0_BYTES / sizeof(float)];
static float demo_output[AGATE_DEMO_OUTPUT0_BYTES / sizeof(float)];

typedef agate_status_t (*run_fn)(const void* const* inputs, void* const* outputs, void* memory);

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

static int run_model(const char* prefix, run_fn run, void* memory, float* input, size_t input_bytes, float* output,
                     size_t output_bytes) {
  char path[32];
  const void* inputs[1];
  void* outputs[1];
  size_t i;
  agate_status_t status;
  snprintf(path, sizeof(path), "%s.in", prefix);
  if (read_input(path, input, input_bytes) != 0) return 1;
  inputs[0] = input;
  outputs[0] = output;
  status = run(inputs, outputs, memory);
  if (status != AGATE_OK) {
    printf("%s: %s: %s\n", prefix, agate_status_name(status), agate_last_error_message());
    return 1;
  }
  printf("AGATE_OUTPUT %s 0", prefix);
  for (i = 0; i < output_bytes / sizeof(float); ++i) {
    uint32_t bits;
    memcpy(&bits, &output[i], sizeof(bits));
    printf(" %08lx", (unsigned long)bits);
  }
  printf("\n");
  return 0;
}

/* The runtime's state for a module on this core, next to what the package's header reserves
 * (sized on the compiling host, with 64-bit pointers). */
static int report_ram(const char* prefix, const uint8_t* module_bytes, size_t module_size,
                      const agate_kernel_table* table, uint64_t fingerprint, void* memory, size_t memory_bytes) {
  size_t module_state = 0, executor = 0;
  agate_module_t* module = NULL;
  agate_status_t status = agate_module_in_place_bytes(module_bytes, module_size, &module_state);
  if (status == AGATE_OK) {
    status = agate_module_load_in_place_fingerprinted(module_bytes, module_size, table, fingerprint, memory,
                                                      module_state, &module);
  }
  if (status == AGATE_OK) status = agate_executor_in_place_bytes(module, &executor);
  if (status != AGATE_OK) {
    printf("%s: %s: %s\n", prefix, agate_status_name(status), agate_last_error_message());
    return 1;
  }
  printf("AGATE_RAM %s module_state=%u executor=%u memory_macro=%u\n", prefix, (unsigned)module_state,
         (unsigned)executor, (unsigned)memory_bytes);
  agate_module_free(module);
  return 0;
}

int main(void) {
  int failures = 0;
  agate_module_t* module = NULL;
  agate_status_t status;
  failures += run_model("kws", agate_kws_run, kws_memory, kws_input, sizeof(kws_input), kws_output, sizeof(kws_output));
  failures +=
      run_model("demo", agate_demo_run, demo_memory, demo_input, sizeof(demo_input), demo_output, sizeof(demo_output));
  failures += report_ram("kws", agate_kws_module, agate_kws_module_size, &agate_kws_kernel_table,
                         agate_kws_kernel_fingerprint, kws_memory, sizeof(kws_memory));
  failures += report_ram("demo", agate_demo_module, agate_demo_module_size, &agate_demo_kernel_table,
                         agate_demo_kernel_fingerprint, demo_memory, sizeof(demo_memory));
  /* The keyword-spotting module with the demo's kernels: refused, never run. */
  status = agate_module_load_in_place_fingerprinted(agate_kws_module, agate_kws_module_size, &agate_demo_kernel_table,
                                                    agate_demo_kernel_fingerprint, kws_memory, sizeof(kws_memory),
                                                    &module);
  printf("AGATE_REFUSED %s: %s\n", agate_status_name(status), agate_last_error_message());
  if (status == AGATE_OK) failures += 1;
  printf("AGATE_DONE failures=%d\n", failures);
  return failures == 0 ? 0 : 1;
}
