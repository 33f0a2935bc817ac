// DFT and STFT (ONNX opset 17/20 forms): a direct O(n^2) sum per output element as a tensor-expression
// reduction over constant twiddle tables (cos and sin of 2*pi*k*n/N, made at compile time, with the
// inverse's 1/N folded in). Real or complex input (a trailing axis of 1 or 2), any axis but the
// batch, dft_length (zero padding past the signal, truncation before its end), onesided and inverse;
// STFT frames the signal by frame_step and weights each frame by the window (an input) inside the sum.
// A fast (radix-2/Bluestein) form is left for later: these are the reference semantics compiled.
#ifndef AGATE_CORE_OPS_DFT_H_
#define AGATE_CORE_OPS_DFT_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterSpectralOps).
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_DFT_H_
