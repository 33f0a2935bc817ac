// Prints the machine description every benchmark starts with: CPU, ISA, measured fp32 FMA peak.
#include "benchmarks/harness/harness.h"

int main() {
  agate::bench::PrintMachine();
  return 0;
}
