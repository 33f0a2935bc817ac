# Sourced by the binding suites (tools/ci/suites/{rust,go,java}.sh) after prepare.sh.
# Where no NVIDIA driver is installed, the runtime opens the fake CUDA driver
# (runtime_minimal/cuda/testing/fake_cuda.h: two GPUs, sm_80 and sm_90, running
# the test kernels' host twins), so the bindings' CUDA tests run instead of
# skipping; on a machine with a driver they run on its GPUs (or skip without one).
# AGATE_CUDA_DRIVER set by the caller wins.
if [ -z "${AGATE_CUDA_DRIVER:-}" ] && ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  export AGATE_CUDA_DRIVER="$ROOT/bindings/testdata/out/lib/libagate_fake_cuda.so"
  export AGATE_FAKE_CUDA_DEVICES="80:1G,90:1G" AGATE_FAKE_CUDA_TEST_KERNELS=1
  echo "no NVIDIA driver here: the CUDA tests run against the fake driver ($AGATE_CUDA_DRIVER)"
fi
