// The CUDA kernels of the cuda profile's test modules (testing/cuda_test_modules.h).
// regenerate.sh compiles them into the committed images (PTX for compute_75, a
// cubin for sm_80). Every kernel follows agate's CUDA calling convention: its
// parameters are device addresses, the call's arguments in plan order, plus the
// workspace last when the kernel has one. They run on a real GPU; the fake
// driver (fake_cuda.h) runs their host twins in the tests instead.
#define N 256

// out = a + b (float32[256]); grid 2 x block 128.
extern "C" __global__ void agate_cuda_add(const float* a, const float* b, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) out[i] = a[i] + b[i];
}

// out = 2 * in through the workspace (float32[256]); grid 2 x block 128.
extern "C" __global__ void agate_cuda_twice_via_workspace(const float* in, float* out, float* workspace) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    workspace[i] = 2.0f * in[i];
    out[i] = workspace[i];
  }
}

// out = in (float32[256]) staged through dynamic shared memory, of which the
// launch may ask for more than the 48 KiB a block gets without opting in;
// grid 1 x block 256.
extern "C" __global__ void agate_cuda_copy_via_shared(const float* in, float* out) {
  extern __shared__ float staged[];
  const int i = threadIdx.x;
  if (i < N) staged[i] = in[i];
  __syncthreads();
  if (i < N) out[i] = staged[N - 1 - i];
}
